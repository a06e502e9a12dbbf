// `npm run bench:events`: webhook deliveries of the Events extension on Kafka — a `tidemark
// worker` and a `tidemark gateway` process, one event stream (`deployments` of one service),
// `--subscriptions` webhook subscriptions to it and `--occurrences` occurrences emitted by the
// `record_deployment` tool. A loopback receiver verifies every delivery's signature with the
// `standardwebhooks` library, as a client would. Reports deliveries per second per worker core
// (deliveries ÷ the worker process's CPU seconds while delivering) and emit → received p50/p99
// (the occurrence's timestamp, taken when the tool emitted it, to its receipt).
//
//   npm run bench:events                                          # 20 subscriptions × 200
//   npm run bench:events -- --subscriptions 5 --occurrences 20    # a smoke run
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { Webhook } from 'standardwebhooks';
import {
  benchTopics,
  machine,
  percentile,
  round,
  startWorkerAndGateway,
  statelessRpc,
  writeResult,
} from './support.ts';

const { values } = parseArgs({
  options: {
    subscriptions: { type: 'string', default: '20' },
    occurrences: { type: 'string', default: '200' },
    out: { type: 'string', default: 'test/bench/results/events.json' },
  },
});
const subscriptions = Number(values.subscriptions);
const occurrences = Number(values.occurrences);
if (![subscriptions, occurrences].every((n) => Number.isInteger(n) && n > 0)) {
  console.error('bench:events: --subscriptions and --occurrences must be positive integers');
  process.exit(2);
}
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const EVENTS = { extensions: { 'io.modelcontextprotocol/events': {} } };

const rpc = (url: string, method: string, params: Record<string, unknown>) =>
  statelessRpc(url, method, params, { name: 'bench-events', capabilities: EVENTS });

/** A receiver that checks every signature and notes when each occurrence arrived. */
async function receiver() {
  const verifier = new Webhook(SECRET);
  const latencies: number[] = [];
  const seen = new Set<string>();
  let rejected = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      try {
        const payload = verifier.verify(body, req.headers as Record<string, string>) as {
          type?: string;
          challenge?: string;
          eventId?: string;
          timestamp?: string;
        };
        if (payload.type === 'verification')
          return void res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ challenge: payload.challenge }));
        const key = `${req.url}|${payload.eventId}`;
        if (payload.eventId !== undefined && !seen.has(key)) {
          seen.add(key);
          latencies.push(Date.now() - Date.parse(payload.timestamp ?? ''));
        }
        res.writeHead(204).end();
      } catch {
        rejected++;
        res.writeHead(401).end();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    latencies,
    rejected: () => rejected,
    close: () => server.close(),
  };
}

/** A process's CPU seconds so far (user + system), from /proc. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
}

const env = {
  ...process.env,
  TIDEMARK_LOG_LEVEL: 'warn',
  TIDEMARK_SECRET: randomBytes(32).toString('hex'),
};
const kafka = await resolveKafka({ log: (line) => console.error(line) });
let row: Record<string, unknown>;
try {
  const flags = await benchTopics(kafka.brokers, 'events');
  const stack = await startWorkerAndGateway(flags, env, {
    worker: ['--tools', '@tidemark/examples/events', '--allow-loopback-webhooks'],
  });
  const hooks = await receiver();
  try {
    const service = { service: 'bench' };
    for (let i = 0; i < subscriptions; i++)
      await rpc(stack.url, 'events/subscribe', {
        name: 'deployments',
        arguments: service,
        delivery: { mode: 'webhook', url: `${hooks.url}?s=${i}`, secret: SECRET },
      });
    const worker = stack.processes.find((p) => p.name === 'worker')!.child.child.pid!;
    const cpuBefore = cpuSeconds(worker);
    const started = Date.now();
    // Emitted a few at a time, as deployments happen: the latency is of delivery, not of a queue.
    for (let i = 0; i < occurrences; i += 10)
      await Promise.all(
        Array.from({ length: Math.min(10, occurrences - i) }, (_, k) =>
          rpc(stack.url, 'tools/call', {
            name: 'record_deployment',
            arguments: { ...service, version: `v${i + k}` },
          }),
        ),
      );
    const expected = subscriptions * occurrences;
    const deadline = Date.now() + 300_000;
    while (hooks.latencies.length < expected) {
      if (Date.now() > deadline)
        throw new Error(`${hooks.latencies.length} of ${expected} deliveries arrived`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (Date.now() - started) / 1000;
    const cpu = cpuSeconds(worker) - cpuBefore;
    const sorted = [...hooks.latencies].sort((a, b) => a - b);
    row = {
      subscriptions,
      occurrences,
      deliveries: expected,
      seconds: round(seconds, 1),
      deliveriesPerSecond: round(expected / seconds, 0),
      workerCpuSeconds: round(cpu, 1),
      deliveriesPerWorkerCoreSecond: round(expected / cpu, 0),
      emitToReceivedMs: { p50: percentile(sorted, 50), p99: percentile(sorted, 99) },
      rejectedSignatures: hooks.rejected(),
    };
  } finally {
    hooks.close();
    for (const { child } of stack.processes.reverse()) await child.stop();
  }
} finally {
  await kafka.stop();
}
const r = row as {
  deliveries: number;
  seconds: number;
  deliveriesPerSecond: number;
  workerCpuSeconds: number;
  deliveriesPerWorkerCoreSecond: number;
  emitToReceivedMs: { p50: number; p99: number };
  rejectedSignatures: number;
};
console.log(
  [
    `webhook deliveries on Kafka (a worker and a gateway): ${subscriptions} subscriptions × ${occurrences} occurrences`,
    '',
    '| deliveries | wall | deliveries/s | worker CPU | deliveries per worker core-second | emit → received p50 | p99 | bad signatures |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    `| ${r.deliveries} | ${r.seconds} s | ${r.deliveriesPerSecond} | ${r.workerCpuSeconds} s | ${r.deliveriesPerWorkerCoreSecond} | ${r.emitToReceivedMs.p50} ms | ${r.emitToReceivedMs.p99} ms | ${r.rejectedSignatures} |`,
  ].join('\n'),
);
writeResult(values.out, { machine: machine(), ...row });
