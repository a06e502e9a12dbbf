import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it, onTestFinished } from 'vitest';
import { startProcess } from '../support/processes.js';

const run = promisify(execFile);
const here = (name: string) => fileURLToPath(new URL(name, import.meta.url));

it('passes the official MCP conformance suite (server, --suite all) through gateway, log and worker', async () => {
  const server = startProcess(onTestFinished, process.execPath, [here('serve.ts')]);
  const { url } = (await server.waitFor((e) => typeof e['url'] === 'string')) as { url: string };
  const cli = fileURLToPath(
    new URL('../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url),
  );
  const { stdout } = await run(
    process.execPath,
    [
      cli,
      'server',
      '--url',
      url,
      '--suite',
      'all',
      '--expected-failures',
      here('expected-failures.yml'),
    ],
    {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 240_000,
    },
  ).catch((error: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(
      `conformance failed:\n${(error.stdout ?? '').split('=== SUMMARY ===')[1] ?? error.stdout ?? ''}\n${error.stderr ?? error.message}`,
    );
  });
  const summary = stdout.split('=== SUMMARY ===')[1] ?? '';
  expect(summary).toMatch(/Total: \d+ passed, 0 failed/);
  expect(summary).not.toMatch(/✗/);
}, 300_000);
