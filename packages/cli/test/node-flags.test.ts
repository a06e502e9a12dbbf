import { describe, expect, it } from 'vitest';
import { nodeRestart } from '../src/node-flags.js';

const GB = 1024 ** 3;
const MACHINE = { constrained: 2 ** 64, total: 24 * GB };
const MALLOC = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_TRIM_THRESHOLD_: '131072',
  TIDEMARK_NODE_RESTARTED: '1',
};

describe('the Node flags and allocator settings tidemark starts with', () => {
  it('bounds the young and old generations and the allocator on a machine without a limit', () => {
    expect(nodeRestart({}, [], MACHINE)).toEqual({
      flags: ['--max-semi-space-size=16', '--max-old-space-size=1024'],
      env: MALLOC,
    });
  });

  it("sizes the old generation at ¾ of a container's limit below 1 GB, and never under 64 MB", () => {
    const old = (constrained: number) =>
      nodeRestart({}, [], { constrained, total: 24 * GB })?.flags[1];
    expect(old(512 * 1024 ** 2)).toBe('--max-old-space-size=384');
    expect(old(64 * 1024 ** 2)).toBe('--max-old-space-size=64');
    expect(old(8 * GB)).toBe('--max-old-space-size=1024');
    expect(old(0)).toBe('--max-old-space-size=1024');
  });

  it('keeps every setting the operator made, and adds nothing when all are made', () => {
    const env = {
      NODE_OPTIONS: '--max-old-space-size=3000',
      MALLOC_ARENA_MAX: '8',
      MALLOC_TRIM_THRESHOLD_: '0',
    };
    expect(nodeRestart(env, ['--max-semi-space-size=4'], MACHINE)).toBeUndefined();
    expect(nodeRestart({ ...env, MALLOC_ARENA_MAX: undefined }, [], MACHINE)).toEqual({
      flags: ['--max-semi-space-size=16'],
      env: { MALLOC_ARENA_MAX: '2', TIDEMARK_NODE_RESTARTED: '1' },
    });
  });

  it('restarts once at most, whatever the restarted process lacks', () => {
    expect(nodeRestart({ TIDEMARK_NODE_RESTARTED: '1' }, [], MACHINE)).toBeUndefined();
  });

  it('takes sizes from the environment, or leaves Node its own with "node"', () => {
    const env = { TIDEMARK_SEMI_SPACE_MB: '8', TIDEMARK_OLD_SPACE_MB: 'node' };
    expect(nodeRestart(env, [], MACHINE)?.flags).toEqual(['--max-semi-space-size=8']);
    expect(
      nodeRestart({ TIDEMARK_OLD_SPACE_MB: ' 2048 ' }, [], { constrained: GB, total: 24 * GB })
        ?.flags,
    ).toEqual(['--max-semi-space-size=16', '--max-old-space-size=2048']);
  });

  it('refuses a size that is not one, naming the variable and the range', () => {
    expect(() => nodeRestart({ TIDEMARK_OLD_SPACE_MB: '32' }, [], MACHINE)).toThrow(
      'TIDEMARK_OLD_SPACE_MB must be a whole number of MB from 64 to 65536',
    );
    expect(() => nodeRestart({ TIDEMARK_SEMI_SPACE_MB: '16MB' }, [], MACHINE)).toThrow(
      'TIDEMARK_SEMI_SPACE_MB must be a whole number of MB from 1 to 1024',
    );
  });
});
