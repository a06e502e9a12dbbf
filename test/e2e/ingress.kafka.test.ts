import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { nginxBinary } from '../support/prerequisites.js';
import { startProcess } from '../support/processes.js';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';
import { Cluster, sleep, type Member } from './cluster.js';

// docs/scaling.md's nginx configuration, as written there, in front of two gateways on the real
// broker: a session's follow-ups and a task's reads carry their key's partition tag, and nginx
// sends every request of one tag to one gateway — while the calls through it stay exact.

const brokers = inject('kafkaBrokers');
const docs = fileURLToPath(new URL('../../docs/scaling.md', import.meta.url));
const PARTITIONS = 12;

/** The documented nginx block, pointed at these gateways and this port. */
function documentedConfig(gateways: readonly Member[], port: number): string {
  const block = /```nginx\n([\s\S]*?)```/.exec(readFileSync(docs, 'utf8'))?.[1];
  if (block === undefined) throw new Error('docs/scaling.md has no nginx block');
  const servers = gateways.map((g) => `    server 127.0.0.1:${g.port};`).join('\n');
  const upstreams = block.match(/^\s*server gateway-\d+:8080;\n/gm) ?? [];
  expect(upstreams).toHaveLength(2);
  return block
    .replace(upstreams.join(''), `${servers}\n`)
    .replace('listen 80;', `listen 127.0.0.1:${port};`);
}

async function startNginx(
  gateways: readonly Member[],
): Promise<{ url: string; routes: () => string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-nginx-'));
  for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
  const port = await reservePorts();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
events { worker_connections 256; }
http {
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  log_format route '$tm_route $upstream_addr $http_mcp_method';
  access_log ${dir}/access.log route;
${documentedConfig(gateways, port)}
}
`,
  );
  const nginx = startProcess(onTestFinished, nginxBinary(), [
    '-p',
    dir,
    '-c',
    conf,
    '-e',
    join(dir, 'error.log'),
    '-g',
    `daemon off; pid ${dir}/nginx.pid;`,
  ]);
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (Date.now() > deadline || nginx.child.exitCode !== null)
      throw new Error(`nginx did not start: ${nginx.stderr.join('')}`);
    await sleep(50);
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    routes: () => readFileSync(join(dir, 'access.log'), 'utf8').split('\n').filter(Boolean),
  };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket.end() !== undefined));
    socket.once('error', () => resolve(false));
  });
}

describe('an ingress hashing the partition tag (docs/scaling.md, nginx)', () => {
  it('sends every request of one partition to one gateway; calls and tasks through it stay exact', async () => {
    const cluster = await Cluster.start({
      brokers,
      label: 'ingress',
      partitions: PARTITIONS,
      gateways: 2,
      workers: 1,
    });
    onTestFinished(() => cluster.stop());
    const ingress = await startNginx(cluster.gateways);
    const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(',');
    for (let i = 0; i < 8; i++) {
      const client = new RawMcpClient(ingress.url);
      await client.initialize();
      expect(client.session).toMatch(/^p[0-9a-z]{3}/);
      for (const id of [1, 2]) {
        const { messages } = await client.callCount(id, 5, 10);
        expect(messages.at(-1)).toMatchObject({
          result: { content: [{ type: 'text', text: numbers(5) }] },
        });
      }
    }
    for (let i = 0; i < 4; i++) {
      const created = await rpc(ingress.url, 'tools/call', {
        name: 'count',
        arguments: { to: 3, delayMs: 20 },
      });
      const taskId = String(created.body.result?.['taskId']);
      expect(taskId).toMatch(/^p[0-9a-z]{3}/);
      const done = await pollTask([ingress.url], taskId, ['completed'], { intervalMs: 20 });
      expect(done).toMatchObject({ result: { content: [{ type: 'text', text: numbers(3) }] } });
    }
    // Every tagged request of one partition went to one gateway: sessions' and tasks' alike.
    const upstreamsOf = new Map<string, Set<string>>();
    let taskReads = 0;
    for (const line of ingress.routes()) {
      const [route = '', upstream = '', method = ''] = line.split(' ');
      if (!/^p[0-9a-z]{3}$/.test(route)) continue;
      if (method === 'tasks/get') taskReads++;
      upstreamsOf.set(route, (upstreamsOf.get(route) ?? new Set()).add(upstream));
    }
    expect(taskReads).toBeGreaterThan(0);
    expect(upstreamsOf.size).toBeGreaterThan(0);
    for (const [route, upstreams] of upstreamsOf)
      expect([route, upstreams.size]).toEqual([route, 1]);
  }, 120_000);
});
