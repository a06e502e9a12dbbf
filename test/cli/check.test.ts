import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, EXIT, main } from '@tidemark/cli';
import { expect, it, onTestFinished, vi } from 'vitest';

// `tidemark check` (what `helm test` runs) against a real `tidemark dev` with authentication on.

const silent = createLogger('test', { TIDEMARK_LOG_LEVEL: 'silent' });

function cli(argv: string[], cwd: string, stopSignal: Promise<void> = Promise.resolve()) {
  const out: string[] = [];
  const code = main(argv, {
    env: {},
    cwd,
    out: (l) => out.push(l),
    err: (l) => out.push(l),
    stopSignal,
    logger: silent,
  });
  return { code, out };
}

it('says a deployment serves: ready, then server/discover through a worker; a 401 counts without a token', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-check-'));
  writeFileSync(join(dir, 'tokens'), 'check-token-0123456789 ops\n');
  writeFileSync(join(dir, 'token'), 'check-token-0123456789\n');
  let stop!: () => void;
  const dev = cli(
    ['dev', '--port', '0', '--data', join(dir, 'data'), '--auth-tokens', 'tokens'],
    dir,
    new Promise<void>((resolve) => (stop = resolve)),
  );
  onTestFinished(async () => {
    stop();
    await dev.code;
    rmSync(dir, { recursive: true, force: true });
  });
  await vi.waitFor(() => expect(dev.out.some((l) => l.startsWith('MCP endpoint: '))).toBe(true), {
    timeout: 20_000,
  });
  const url = dev.out.find((l) => l.startsWith('MCP endpoint: '))!.slice('MCP endpoint: '.length);

  const anonymous = cli(['check', url], dir);
  expect(await anonymous.code).toBe(EXIT.ok);
  expect(anonymous.out.join('\n')).toMatch(
    /ready: .*\/readyz\nserving, authentication required \(Bearer/,
  );

  const authenticated = cli(['check', url, '--token-file', 'token'], dir);
  expect(await authenticated.code).toBe(EXIT.ok);
  expect(authenticated.out.at(-1)).toMatch(
    /^serving: tidemark 0\.1\.0 \(server\/discover through a worker; protocol .*2026-07-28/,
  );

  const nobody = cli(['check', 'http://127.0.0.1:9/mcp'], dir);
  expect(await nobody.code).toBe(EXIT.failure);
  const bad = cli(['check', 'not a url'], dir);
  expect(await bad.code).toBe(EXIT.usage);
});
