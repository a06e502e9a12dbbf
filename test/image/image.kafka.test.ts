import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { reservePorts, uniqueTopicName } from '@tidemark/kafka-fixtures';
import { expect, inject, it, onTestFinished } from 'vitest';
import { TrackedClient } from '../e2e/calls.js';
import { sleep } from '../e2e/cluster.js';

// The image `npm run image:build` built (the prerequisites build it before the suites run), run
// for real by the container engine: the topics command, a gateway and a worker on the test broker,
// each as the chart runs them — non-root, on a read-only root filesystem, no capabilities — a call
// through them, and the worker's container killed mid-call and started again.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const brokers = inject('kafkaBrokers').join(',');

interface Engine {
  command: string;
  global: string[];
  kind: 'podman' | 'docker';
  /** What `run` needs on this host (podman: the host's open-files limit). */
  run: string[];
  tag: string;
}

async function engine(): Promise<Engine> {
  const { stdout } = await run(process.execPath, [join(root, 'infra/image/build.mjs'), '--print']);
  return JSON.parse(stdout) as Engine;
}

it('the built image: topics, a gateway and a worker as containers on the broker; the worker killed mid-call and started again', async () => {
  const e = await engine();
  const containers = (...args: string[]) =>
    run(e.command, [...e.global, ...args], { maxBuffer: 16 << 20 });
  const prefix = `${uniqueTopicName('image')}.`;
  const secretDir = mkdtempSync(join(tmpdir(), 'tidemark-image-secret-'));
  writeFileSync(join(secretDir, 'secret'), randomBytes(32).toString('hex'));
  // Read by the image's user (10001), as a Secret volume is.
  chmodSync(secretDir, 0o755);
  chmodSync(join(secretDir, 'secret'), 0o644);
  const names = ['topics', 'gateway', 'worker'].map(
    (role) => `${prefix.replaceAll('.', '-')}${role}`,
  );
  onTestFinished(async ({ task }) => {
    // A failure shows what each container said.
    if (task.result?.state === 'fail')
      for (const name of names) {
        const logs = await containers('logs', name).catch((error: Error) => ({
          stdout: '',
          stderr: error.message,
        }));
        process.stderr.write(`--- ${name}\n${logs.stdout}${logs.stderr}\n`);
      }
    await containers('rm', '--force', '--time', '0', ...names).catch(() => undefined);
  });
  // As the chart's pods run: its securityContext (non-root, read-only root, no capabilities).
  const hardened = [
    ...e.run,
    '--network',
    'host',
    '--read-only',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
  ];
  const common = ['--brokers', brokers, '--prefix', prefix];

  const topics = await containers(
    'run',
    '--name',
    names[0]!,
    ...hardened,
    e.tag,
    'topics',
    'create',
    ...common,
    '--partitions',
    '2',
    '--replication-factor',
    '1',
  );
  expect(topics.stdout).toMatch(/created: .*requests/);

  const port = await reservePorts();
  await containers(
    'run',
    '--detach',
    '--name',
    names[1]!,
    ...hardened,
    '--volume',
    `${secretDir}:/run/tidemark:ro`,
    e.tag,
    'gateway',
    '--auth',
    'none',
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--secret-file',
    '/run/tidemark/secret',
    '--group',
    `${prefix}gateways`,
    ...common,
  );
  const worker = [
    '--name',
    names[2]!,
    ...hardened,
    '--volume',
    `${secretDir}:/run/tidemark:ro`,
    e.tag,
    'worker',
    '--secret-file',
    '/run/tidemark/secret',
    '--tools',
    '@tidemark/examples/counting',
    '--group',
    `${prefix}workers`,
    ...common,
  ];
  await containers('run', '--detach', ...worker);

  // The image's user and filesystem, as the containers see them.
  const id = await containers('exec', names[1]!, 'id', '-u');
  expect(id.stdout.trim()).toBe('10001');
  await expect(containers('exec', names[1]!, 'touch', '/app/written')).rejects.toThrow(
    /Read-only file system/,
  );

  await expect
    .poll(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status,
      { timeout: 60_000, interval: 500 },
    )
    .toBe(200);
  await expect
    .poll(
      async () =>
        (await containers('logs', names[2]!)).stderr + (await containers('logs', names[2]!)).stdout,
      { timeout: 60_000, interval: 500 },
    )
    .toMatch(/worker \w+ started/);

  const client = await TrackedClient.connect(`http://127.0.0.1:${port}/mcp`, 'image', 80);
  onTestFinished(() => client.close());
  const first = await client.call({ to: 5, delayMs: 20 });
  expect(first.verdict.outcome).toBe('exact');

  // The worker's container is killed (SIGKILL) while it counts, and started again: the call is
  // answered exactly, or with an explicit reset then a consistent count — never silently wrong.
  let killed: Promise<unknown> | undefined;
  const call = await client.call({
    to: 30,
    delayMs: 100,
    timeoutMs: 150_000,
    onProgress: (value) => {
      if (value === 5 && !killed)
        killed = containers('kill', names[2]!).then(async () => {
          await sleep(1_000);
          await containers('start', names[2]!);
        });
    },
  });
  await killed;
  expect(killed).toBeDefined();
  expect(['exact', 'reset'], JSON.stringify(call.seen.slice(-3))).toContain(call.verdict.outcome);
  expect(call.seen.at(-1)).toEqual({
    kind: 'result',
    numbers: Array.from({ length: 30 }, (_, i) => i + 1),
  });
  const restarts = await containers('inspect', '--format', '{{.State.Running}}', names[2]!);
  expect(restarts.stdout.trim()).toBe('true');
}, 300_000);
