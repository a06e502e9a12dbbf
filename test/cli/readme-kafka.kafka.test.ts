import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { expect, inject, it, onTestFinished } from 'vitest';

// The tutorial's "Kafka on a laptop" block (docs/tutorial/index.md), run as written — but for three substitutions: the
// suite's broker stands in for `npm run kafka:start`'s (its address for 127.0.0.1:19092), a free
// port for 3000, and this clone's launcher for `npx tidemark` (run from a scratch directory, so
// tokens.txt lands there and not in the clone).

const root = fileURLToPath(new URL('../../', import.meta.url));
const launcher = join(root, 'packages/cli/bin/tidemark.js');

function laptopBlock(): string[] {
  const tutorial = readFileSync(join(root, 'docs/tutorial/index.md'), 'utf8');
  const block = /<!-- laptop-kafka -->\s*```sh\n([\s\S]*?)```/.exec(tutorial);
  if (block === null) throw new Error('docs/tutorial/index.md: no laptop-kafka block');
  return block[1]!.trim().split('\n');
}

it('the tutorial block starts a gateway and a worker on Kafka that an authenticated client calls', async () => {
  const broker = inject('kafkaBrokers')[0]!;
  const port = await reservePorts();
  const lines = laptopBlock();
  expect(lines[0]).toMatch(/^npm run kafka:start\b/);
  // Commands only: a block whose fence is not closed would hand the prose after it to bash.
  for (const line of lines) expect(line).toMatch(/^(npm|npx|echo|export) /);
  const script = lines
    .slice(1)
    .map((line) =>
      line
        .replaceAll('127.0.0.1:19092', broker)
        .replace('--port 3000', `--port ${port}`)
        .replace(/^npx tidemark /, `"${process.execPath}" "${launcher}" `),
    )
    .join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-laptop-'));
  const shell = spawn('bash', ['-euo', 'pipefail', '-c', `${script}\nwait`], {
    cwd: dir,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  shell.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  onTestFinished(() => {
    try {
      process.kill(-shell.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  await expect.poll(() => output, { timeout: 60_000 }).toMatch(/started; tools:/);
  await expect.poll(() => output, { timeout: 60_000 }).toMatch(/gateway listening on port/);

  const [token, subject] = readFileSync(join(dir, 'tokens.txt'), 'utf8').trim().split(' ');
  expect(subject).toBe('alice');
  const client = new Client({ name: 'laptop', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  onTestFinished(() => client.close());
  const result = await client.callTool({ name: 'count', arguments: { to: 3, delayMs: 0 } });
  expect(result.content).toEqual([{ type: 'text', text: '1,2,3' }]);
  // Without the token: refused.
  const anonymous = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  expect(anonymous.status).toBe(401);
}, 120_000);
