import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import { groupMembers, reservePorts, uniqueTopicName } from '@tidemark/kafka-fixtures';
import { expect, inject, it, onTestFinished } from 'vitest';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';

const run = promisify(execFile);
const brokers = inject('kafkaBrokers').join(',');
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'packages/cli/dist/bin.js');

function tidemark(args: string[], ready: RegExp): Promise<void> {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`tidemark ${args[0]} not ready in 60 s:\n${output}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) =>
      reject(new Error(`tidemark ${args[0]} exited ${code}:\n${output}`)),
    );
  });
}

it('tidemark topics create, two gateways and two workers on the real broker, driven by the official client across both gateways', async () => {
  const prefix = `${uniqueTopicName('cli')}.`;
  const common = ['--brokers', brokers, '--prefix', prefix];
  onTestFinished(async () => {
    const admin = new Admin({
      clientId: 'tidemark-test-cleanup',
      bootstrapBrokers: brokers.split(','),
    });
    try {
      const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      if (mine.length > 0) await admin.deleteTopics({ topics: mine });
    } finally {
      await admin.close();
    }
  });
  const created = await run(process.execPath, [
    bin,
    'topics',
    'create',
    ...common,
    '--partitions',
    '2',
    '--replication-factor',
    '1',
  ]);
  expect(created.stdout).toMatch(/created: .*requests/);
  const checked = await run(process.execPath, [
    bin,
    'topics',
    'check',
    ...common,
    '--partitions',
    '2',
    '--replication-factor',
    '1',
  ]);
  expect(checked.stdout).toMatch(/topics ok/);

  const secretFile = join(mkdtempSync(join(tmpdir(), 'tidemark-secret-')), 'secret');
  writeFileSync(secretFile, randomBytes(32).toString('hex'));
  const ports = [await reservePorts(), await reservePorts()] as const;
  await Promise.all([
    // The first gateway mints event ids in the default format (1), the second is told 2: a fleet
    // half way through the two-step switch docs/upgrades.md describes.
    ...ports.map((port, i) =>
      tidemark(
        [
          'gateway',
          ...(i === 1 ? ['--event-id-version', '2'] : []),
          '--auth',
          'none',
          '--port',
          String(port),
          '--host',
          '127.0.0.1',
          '--secret-file',
          secretFile,
          '--console',
          'on',
          '--group',
          `${prefix}gateways`,
          ...common,
        ],
        /Console: /,
      ),
    ),
    ...[1, 2].map(() =>
      tidemark(
        [
          'worker',
          '--secret-file',
          secretFile,
          '--tools',
          '@tidemark/examples/counting',
          '--group',
          `${prefix}workers`,
          ...common,
        ],
        /worker \w+ started/,
      ),
    ),
  ]);
  for (const port of ports) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
  }
  // The gateways share out the partitions they mint keys onto in a group of their own.
  await expect
    .poll(() => groupMembers(brokers.split(','), `${prefix}gateways`), { timeout: 30_000 })
    .toHaveLength(2);

  const proxy = await TcpProxy.start(ports[0]);
  onTestFinished(() => proxy.close());
  const client = await connectResumingClient(`http://127.0.0.1:${proxy.port}/mcp`, {
    name: 'cli-cluster',
    maxRetries: 50,
  });
  const progress: number[] = [];
  let moved = false;
  const result = await client.callTool(
    { name: 'count', arguments: { to: 30, delayMs: 30 } },
    {
      timeout: 120_000,
      onprogress: (p) => {
        progress.push(p.progress);
        if (p.progress === 10 && !moved) {
          moved = true;
          proxy.target = ports[1];
          proxy.cut();
        }
      },
    },
  );
  const numbers = Array.from({ length: 30 }, (_, i) => i + 1);
  expect(moved).toBe(true);
  expect(progress).toEqual(numbers);
  expect(result.content).toEqual([{ type: 'text', text: numbers.join(',') }]);

  // The gateway the client resumed on shows that decision in its own console (this replica's).
  const decisions = await (await fetch(`http://127.0.0.1:${ports[1]}/console`)).text();
  expect(decisions).toMatch(/outcome-resume/);
  expect(decisions).toContain(hostname());

  // tidemark console over the same topics, read-only: the session, its call, the call's records.
  const consolePort = await reservePorts();
  await tidemark(['console', '--port', String(consolePort), ...common], /Console: /);
  const consoleUrl = `http://127.0.0.1:${consolePort}/console`;
  const overview = await (await fetch(consoleUrl)).text();
  expect(overview).toContain('read-only');
  const sessionLink = /href="(\/console\/sessions\/[^"]+)"/.exec(overview)?.[1];
  expect(sessionLink).toBeDefined();
  const session = await (await fetch(`http://127.0.0.1:${consolePort}${sessionLink}`)).text();
  const callLink =
    /href="(\/console\/sessions\/[^"]+\/calls\/[^"]+)"\s*>\s*tools\/call count\s*</.exec(
      session,
    )?.[1];
  expect(callLink).toBeDefined();
  const call = await (await fetch(`http://127.0.0.1:${consolePort}${callLink}`)).text();
  expect(call.match(/progress \d+\/30/g)).toHaveLength(30);
  expect(call).toContain(`result: ${numbers.join(',')}`);
  const live = await fetch(`${consoleUrl}/events`, { signal: AbortSignal.timeout(2_000) });
  expect(live.headers.get('content-type')).toBe('text/event-stream');
  await live.body?.cancel();

  // Each gateway resumes the other's ids: a v1 id on the v2 gateway, a v2 id on the v1 gateway.
  for (const [from, to, version] of [
    [ports[0], ports[1], 1],
    [ports[1], ports[0], 2],
  ] as const) {
    const raw = new RawMcpClient(`http://127.0.0.1:${from}/mcp`);
    await raw.initialize();
    const cut = await raw.callCount(1, 3, 50, 1);
    const last = cut.ids.at(-1)!;
    expect(Buffer.from(last, 'base64url')[0]).toBe(version);
    const resumed = await new RawMcpClient(`http://127.0.0.1:${to}/mcp`, raw.session).resume(last);
    const texts: string[] = [];
    await readSse(resumed, (event) => {
      if (event.data !== '') texts.push(event.data);
    });
    expect(texts.at(-1)).toContain('1,2,3');
  }
}, 180_000);

it('tidemark topics create with more replicas than brokers: exit 2 and the flag that fixes it', async () => {
  const prefix = `${uniqueTopicName('rf')}.`;
  const admin = new Admin({ clientId: 'tidemark-test', bootstrapBrokers: brokers.split(',') });
  const count = (await admin.metadata({ topics: [] }).finally(() => admin.close())).brokers.size;
  const failed = await run(process.execPath, [
    bin,
    'topics',
    'create',
    '--brokers',
    brokers,
    '--prefix',
    prefix,
    '--replication-factor',
    String(count + 1),
  ]).catch((error: unknown) => error as { code: number; stderr: string });
  const brokersWord = count === 1 ? 'broker' : 'brokers';
  expect(failed).toMatchObject({
    code: 2,
    stderr: `tidemark topics: replication factor ${count + 1} is larger than the ${count} available ${brokersWord}: pass --replication-factor ${count}\n`,
  });
});
