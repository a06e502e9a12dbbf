import { randomBytes } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import { connectResumingClient } from '../support/clients.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { provisionTopics } from '@tidemark/kafka';
import { uniqueTopicName } from '@tidemark/kafka-fixtures';
import { beforeAll, describe, expect, inject, it, onTestFinished, afterAll } from 'vitest';
import { startProcess, supportScript, type TestProcess } from '../support/processes.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { pythonWithMcp } from '../support/prerequisites.js';

// Official clients, unmodified, against two gateway processes sharing one broker and one worker:
// initialize on one replica, call a streaming tool, cut the socket mid-stream, resume on the other.

const brokers = inject('kafkaBrokers');
const cleanups: Array<() => void> = [];
let ports: [number, number] = [0, 0];
let names: Record<string, string> = {};

beforeAll(async () => {
  const prefix = `${uniqueTopicName('clients')}.`;
  ({ names } = await provisionTopics({ brokers }, { prefix, partitions: 2, replicationFactor: 1 }));
  const secret = randomBytes(32).toString('hex');
  const register = (fn: () => void) => cleanups.push(fn);
  const worker = startProcess(register, process.execPath, [
    supportScript('worker-process.ts'),
    brokers.join(','),
    prefix,
    `${prefix}workers`,
  ]);
  const gateways: TestProcess[] = [0, 1].map(() =>
    startProcess(register, process.execPath, [
      supportScript('gateway-process.ts'),
      brokers.join(','),
      prefix,
      secret,
    ]),
  );
  await worker.waitFor(
    (e) => Array.isArray(e['assigned']) && (e['assigned'] as number[]).length === 2,
  );
  const [a, b] = await Promise.all(
    gateways.map((g) => g.waitFor((e) => typeof e['port'] === 'number')),
  );
  ports = [a!['port'] as number, b!['port'] as number];
}, 90_000);

afterAll(async () => {
  for (const cleanup of cleanups) cleanup();
  const admin = new Admin({ clientId: 'tidemark-test-cleanup', bootstrapBrokers: brokers });
  try {
    await admin.deleteTopics({ topics: Object.values(names) });
  } finally {
    await admin.close();
  }
});

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

async function proxyToFirst() {
  const proxy = await TcpProxy.start(ports[0]);
  onTestFinished(() => proxy.close());
  return proxy;
}

/** At progress 10: send the reconnect to the other replica and cut every socket. */
function cutAtTen(proxy: TcpProxy) {
  let cut = false;
  return {
    onProgress: (progress: number) => {
      if (!cut && progress === 10) {
        cut = true;
        proxy.target = ports[1];
        proxy.cut();
      }
    },
    get cut() {
      return cut;
    },
  };
}

describe('official MCP clients against two gateway processes on the real broker', () => {
  it('TypeScript SDK v2 client: exact progress and result across a cut and a change of replica', async () => {
    const proxy = await proxyToFirst();
    const client = await connectResumingClient(`http://127.0.0.1:${proxy.port}/mcp`, {
      name: 'interop-v2',
    });
    const progress: number[] = [];
    const cutter = cutAtTen(proxy);
    const result = await client.callTool(
      { name: 'count', arguments: { to: 30, delayMs: 30 } },
      { onprogress: (p) => (progress.push(p.progress), cutter.onProgress(p.progress)) },
    );
    expect(cutter.cut).toBe(true);
    expect(progress).toEqual(numbers(30));
    expect(result.content).toEqual([{ type: 'text', text: numbers(30).join(',') }]);
  });

  it('TypeScript SDK v1 client (@modelcontextprotocol/sdk): exact progress and result across a cut and a change of replica', async () => {
    const proxy = await proxyToFirst();
    const client = new ClientV1({ name: 'interop-v1', version: '1.0.0' });
    await client.connect(
      new TransportV1(new URL(`http://127.0.0.1:${proxy.port}/mcp`), {
        reconnectionOptions: {
          initialReconnectionDelay: 100,
          maxReconnectionDelay: 500,
          reconnectionDelayGrowFactor: 1.5,
          maxRetries: 20,
        },
      }),
    );
    onTestFinished(() => client.close());
    const progress: number[] = [];
    const cutter = cutAtTen(proxy);
    const result = await client.callTool(
      { name: 'count', arguments: { to: 30, delayMs: 30 } },
      undefined,
      { onprogress: (p) => (progress.push(p.progress), cutter.onProgress(p.progress)) },
    );
    expect(cutter.cut).toBe(true);
    expect(progress).toEqual(numbers(30));
    expect(result.content).toEqual([{ type: 'text', text: numbers(30).join(',') }]);
  });

  it('Python SDK client (mcp on PyPI): exact progress and result across a cut and a change of replica', async () => {
    const proxy = await proxyToFirst();
    const python = pythonWithMcp();
    const cutter = cutAtTen(proxy);
    const client = startProcess(
      onTestFinished,
      python,
      [supportScript('python_client.py'), `http://127.0.0.1:${proxy.port}/mcp`, '30', '30'],
      {
        onEvent: (event) => {
          if (typeof event['progress'] === 'number') cutter.onProgress(event['progress']);
        },
      },
    );
    const final = await client.waitFor((e) => 'result' in e || 'error' in e, 60_000);
    const all = client.events.flatMap((e) =>
      typeof e['progress'] === 'number' ? [e['progress']] : [],
    );
    expect(cutter.cut).toBe(true);
    expect(final).toEqual({ result: numbers(30).join(',') });
    expect(all).toEqual(numbers(30));
  });
});
