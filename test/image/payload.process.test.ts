import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it, onTestFinished } from 'vitest';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// What the image holds, built the way its Dockerfile builds it (infra/image/runtime-payload.sh),
// without a container engine: it runs the CLI, serves a call, and holds no test-only package.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const TEST_ONLY = [
  'testcontainers',
  'ssh2',
  'vitest',
  '@vitest',
  'dockerode',
  'fast-check',
  'docker-compose',
  '@tidemark/kafka-fixtures',
  '@tidemark/fixtures',
  '@tidemark/testing',
  'typescript',
  'turbo',
  'eslint',
  'prettier',
];

it('the image payload: production dependencies only, and the CLI runs from it (help, a dev call)', async () => {
  expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toContain(
    'infra/image/runtime-payload.sh /src /app',
  );
  const dest = mkdtempSync(join(tmpdir(), 'tidemark-image-'));
  onTestFinished(() => rmSync(dest, { recursive: true, force: true }));
  const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}` };
  await run('bash', [join(root, 'infra/image/runtime-payload.sh'), root, dest], {
    env,
    maxBuffer: 16 << 20,
  });

  const installed = readdirSync(join(dest, 'node_modules')).flatMap((name) =>
    name.startsWith('@')
      ? readdirSync(join(dest, 'node_modules', name)).map((scoped) => `${name}/${scoped}`)
      : [name],
  );
  for (const name of TEST_ONLY)
    expect(
      installed.filter((i) => i === name || i.startsWith(`${name}/`)),
      name,
    ).toEqual([]);
  expect(existsSync(join(dest, 'packages/kafka-fixtures'))).toBe(false);
  expect(existsSync(join(dest, 'packages/testing'))).toBe(false);
  expect(existsSync(join(dest, 'node_modules/.bin/node'))).toBe(false);

  const bin = join(dest, 'packages/cli/dist/bin.js');
  const { stdout } = await run(process.execPath, [bin, 'gateway', '--help']);
  expect(stdout).toMatch(/^Usage: tidemark gateway/);
  const child = spawn(
    process.execPath,
    [bin, 'dev', '--port', '0', '--data', join(dest, 'state')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  onTestFinished(() => void (child.exitCode === null && child.kill('SIGKILL')));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  for (let i = 0; !/MCP endpoint: (\S+)/.test(output); i++) {
    if (i > 400) throw new Error(`no endpoint: ${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const client = new RawMcpClient(/MCP endpoint: (\S+)/.exec(output)![1]!);
  await client.initialize();
  const call = await client.callCount(1, 3, 0);
  expect(call.messages.at(-1)).toMatchObject({
    result: { content: [{ type: 'text', text: '1,2,3' }] },
  });
  // The console's page and its assets are in the payload (assets are files, not dist).
  const console = /Console: (\S+)/.exec(output)![1]!;
  expect(await (await fetch(console)).text()).toContain(client.session.slice(0, 12));
  expect((await fetch(`${console}/assets/console.js`)).status).toBe(200);
}, 180_000);
