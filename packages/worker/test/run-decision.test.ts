import type { StreamHead } from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';
import { decideRun } from '../src/execution/run-decision.js';

const head = (attempt: number, terminal = false) =>
  ({
    generation: { epoch: 'e'.repeat(20), attempt },
    ...(terminal ? { terminal: { seq: 3 } } : {}),
  }) as unknown as StreamHead;

describe('decideRun', () => {
  const limits = { maxExecutionsPerCall: 2 };

  it('a call nobody began runs as generation 1', () => {
    expect(decideRun(undefined, limits)).toEqual({ kind: 'run', attempt: 1 });
  });

  it('a call begun and not finished runs again, as the next generation, up to the limit', () => {
    expect(decideRun(head(1), limits)).toEqual({ kind: 'run', attempt: 2 });
  });

  it('past the limit it is refused with an error that says how often it was started', () => {
    expect(decideRun(head(2), limits)).toEqual({
      kind: 'refuse',
      attempt: 3,
      error: {
        code: -32603,
        message:
          'Internal error: the call was started 2 times without finishing (limit 2); it is not run again',
      },
    });
  });

  it('a call that ended is done, whatever its attempts', () => {
    expect(decideRun(head(1, true), limits)).toEqual({ kind: 'done' });
    expect(decideRun(head(9, true), limits)).toEqual({ kind: 'done' });
  });

  it('a session running as many calls as it may refuses the next, as a bad request to retry', () => {
    const session = { ...limits, maxConcurrentCalls: 2 };
    expect(decideRun(undefined, session, 1)).toEqual({ kind: 'run', attempt: 1 });
    expect(decideRun(head(1), session, 2)).toEqual({
      kind: 'refuse',
      attempt: 2,
      error: {
        code: -32000,
        message: 'Too many concurrent requests in this session (limit 2); retry later',
      },
    });
  });

  it('a lane without sessions has no concurrency bound; a finished call is done even when busy', () => {
    expect(decideRun(undefined, limits, 1_000)).toEqual({ kind: 'run', attempt: 1 });
    expect(decideRun(head(1, true), { ...limits, maxConcurrentCalls: 1 }, 5)).toEqual({
      kind: 'done',
    });
  });
});
