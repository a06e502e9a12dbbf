// `npm run bench:effects`: what exactly-once costs. Sequential 2026-07-28 `tools/call`s, the same
// number of each kind interleaved, on `tidemark dev` (embedded log) and on Kafka (a worker and a
// gateway process):
//   plain    a call that takes no step
//   keyed    the same with an `Idempotency-Key` (a fresh one per call): the key's claim and answer
//   steps    a call that takes `--steps` durable steps (each journaled before the tool goes on)
// Prints p50/p99 latency per kind, the keyed call's overhead, and the cost of one step; writes JSON.
//
//   npm run bench:effects                   # 300 calls of each kind
//   npm run bench:effects -- --calls 20     # a smoke run
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { statelessRequest } from '@tidemark/protocol';
import {
  benchTopics,
  machine,
  percentile,
  ROOT,
  round,
  startDev,
  startWorkerAndGateway,
  writeResult,
} from './support.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '300' },
    steps: { type: 'string', default: '20' },
    out: { type: 'string', default: 'test/bench/results/effects.json' },
  },
});
const calls = Number(values.calls);
const stepsPerCall = Number(values.steps);
if (!Number.isInteger(calls) || calls < 1 || !Number.isInteger(stepsPerCall) || stepsPerCall < 1) {
  console.error('bench:effects: --calls and --steps must be positive integers');
  process.exit(2);
}
const TOOLS = join(ROOT, 'test/bench/bench-tools.ts');
const KINDS = ['plain', 'keyed', 'steps'] as const;
type Kind = (typeof KINDS)[number];

/** One stateless `tools/call steps`, answered as JSON; its latency in ms. */
async function call(url: string, kind: Kind): Promise<number> {
  const { headers, body } = statelessRequest(
    'tools/call',
    { name: 'steps', arguments: { n: kind === 'steps' ? stepsPerCall : 0 } },
    { clientInfo: { name: 'bench-effects', version: '1' }, capabilities: {}, name: 'steps' },
  );
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      ...headers,
      Accept: 'application/json',
      ...(kind === 'keyed' ? { 'Idempotency-Key': randomUUID() } : {}),
    },
    body,
  });
  const answer = (await response.json()) as { result?: unknown; error?: unknown };
  if (answer.result === undefined) throw new Error(`${kind}: ${JSON.stringify(answer)}`);
  return performance.now() - started;
}

interface Row {
  log: string;
  calls: number;
  stepsPerCall: number;
  p50Ms: Record<Kind, number>;
  p99Ms: Record<Kind, number>;
  keyedOverheadPct: number;
  perStepMs: number;
}

async function measure(log: string, url: string): Promise<Row> {
  for (let i = 0; i < Math.min(20, calls); i++) for (const kind of KINDS) await call(url, kind);
  const times: Record<Kind, number[]> = { plain: [], keyed: [], steps: [] };
  for (let i = 0; i < calls; i++) for (const kind of KINDS) times[kind].push(await call(url, kind));
  const p = (kind: Kind, q: number) =>
    round(
      percentile(
        [...times[kind]].sort((a, b) => a - b),
        q,
      ),
    );
  const p50Ms = { plain: p('plain', 50), keyed: p('keyed', 50), steps: p('steps', 50) };
  const p99Ms = { plain: p('plain', 99), keyed: p('keyed', 99), steps: p('steps', 99) };
  return {
    log,
    calls,
    stepsPerCall,
    p50Ms,
    p99Ms,
    keyedOverheadPct: round(((p50Ms.keyed - p50Ms.plain) / p50Ms.plain) * 100, 1),
    perStepMs: round((p50Ms.steps - p50Ms.plain) / stepsPerCall, 3),
  };
}

const rows: Row[] = [];
// Quiet servers (no line per call on stderr); the Kafka replicas share one event-id secret.
const env = {
  ...process.env,
  TIDEMARK_LOG_LEVEL: 'warn',
  TIDEMARK_SECRET: randomBytes(32).toString('hex'),
};
const dev = await startDev(env, ['--tools', TOOLS]);
try {
  rows.push(await measure('embedded (tidemark dev)', dev.url));
} finally {
  await dev.process.stop();
}
const kafka = await resolveKafka({ log: (line) => console.error(line) });
try {
  const flags = await benchTopics(kafka.brokers, 'effects');
  const stack = await startWorkerAndGateway(flags, env, { worker: ['--tools', TOOLS] });
  try {
    rows.push(await measure('kafka (worker + gateway)', stack.url));
  } finally {
    for (const { child } of stack.processes.reverse()) await child.stop();
  }
} finally {
  await kafka.stop();
}

console.log(
  [
    `Exactly-once costs: ${calls} sequential calls of each kind, ${stepsPerCall} steps per "steps" call`,
    '',
    '| log | plain p50 / p99 | keyed p50 / p99 | keyed overhead (p50) | steps p50 / p99 | one step |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.log} | ${r.p50Ms.plain} / ${r.p99Ms.plain} ms | ${r.p50Ms.keyed} / ${r.p99Ms.keyed} ms | ${r.keyedOverheadPct}% | ${r.p50Ms.steps} / ${r.p99Ms.steps} ms | ${r.perStepMs} ms |`,
    ),
  ].join('\n'),
);
writeResult(values.out, { machine: machine(), rows });
