import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startDevServer } from '../support/dev-server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(root, 'packages/cli/dist/bin.js');

/** The command line `tidemark dev` runs with once started (same pid: it restarts itself in place). */
async function devStarted(
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
): Promise<{ line: string[]; environ: string[] }> {
  const data = join(mkdtempSync(join(tmpdir(), 'tidemark-flags-')), 'state');
  const server = startDevServer(
    process.execPath,
    [...nodeArgs, BIN, 'dev', '--port', '0', '--data', data],
    { env: { ...process.env, ...env } },
  );
  await server.url;
  const read = (what: string) =>
    readFileSync(`/proc/${server.child.pid}/${what}`, 'utf8').split('\0');
  const started = { line: read('cmdline'), environ: read('environ') };
  server.kill('SIGTERM');
  return started;
}

async function devCommandLine(env: NodeJS.ProcessEnv, nodeArgs: string[] = []): Promise<string[]> {
  return (await devStarted(env, nodeArgs)).line;
}

describe('the Node flags and allocator settings tidemark starts with (memory sized for what it holds)', () => {
  it('adds its flags and glibc settings by default, in the same process, with its arguments kept', async () => {
    const { line, environ } = await devStarted({
      TIDEMARK_SEMI_SPACE_MB: '',
      TIDEMARK_OLD_SPACE_MB: '',
      NODE_OPTIONS: '',
      MALLOC_ARENA_MAX: undefined,
      MALLOC_TRIM_THRESHOLD_: undefined,
    });
    // This machine has no container limit, so the old generation gets the default limit.
    expect(line.slice(1, 5)).toEqual([
      '--max-semi-space-size=16',
      '--max-old-space-size=1024',
      BIN,
      'dev',
    ]);
    expect(environ).toEqual(
      expect.arrayContaining(['MALLOC_ARENA_MAX=2', 'MALLOC_TRIM_THRESHOLD_=131072']),
    );
  });

  it("keeps the operator's allocator settings", async () => {
    const { environ } = await devStarted({ MALLOC_ARENA_MAX: '4' });
    expect(environ).toContain('MALLOC_ARENA_MAX=4');
    expect(environ).not.toContain('MALLOC_ARENA_MAX=2');
  });

  it('takes another size from TIDEMARK_SEMI_SPACE_MB, and leaves Node its own with "node"', async () => {
    expect(await devCommandLine({ TIDEMARK_SEMI_SPACE_MB: '8' })).toContain(
      '--max-semi-space-size=8',
    );
    const own = await devCommandLine({ TIDEMARK_SEMI_SPACE_MB: 'node' });
    expect(own.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
  });

  it("keeps the operator's own flag, given on the command line or in NODE_OPTIONS", async () => {
    const given = await devCommandLine({}, ['--max-semi-space-size=4']);
    expect(given.filter((a) => a.startsWith('--max-semi-space-size'))).toEqual([
      '--max-semi-space-size=4',
    ]);
    const options = await devCommandLine({ NODE_OPTIONS: '--max-semi-space-size=4' });
    expect(options.some((a) => a.startsWith('--max-semi-space-size'))).toBe(false);
  });

  it('refuses a size that is not one, before starting anything', async () => {
    const run = promisify(execFile)(process.execPath, [BIN, 'dev'], {
      env: { ...process.env, TIDEMARK_SEMI_SPACE_MB: '16MB' },
    });
    const failure = (await run.catch((error: unknown) => error)) as {
      code: number;
      stderr: string;
    };
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain('TIDEMARK_SEMI_SPACE_MB must be a whole number of MB');
  });
});
