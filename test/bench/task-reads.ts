// `npm run bench:task-reads`: what one `tasks/get` costs when the task's partition is busy. A task
// waits for its user on Kafka (a worker and a gateway process) while a million records of other
// sessions are written to the same partition of `events`; then `tasks/get`, one after another:
// p50/p99 (target ≤ 5 ms). The read is of the task's head, so it should not grow with the
// partition: the same reads before the million records are written say so.
//
//   npm run bench:task-reads                        # a million records, 300 reads
//   npm run bench:task-reads -- --records 10000     # a smoke run
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { KafkaLog } from '@tidemark/kafka';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { partitionForSession, topicNames } from '@tidemark/protocol';
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
    records: { type: 'string', default: '1000000' },
    reads: { type: 'string', default: '300' },
    out: { type: 'string', default: 'test/bench/results/task-reads.json' },
  },
});
const records = Number(values.records);
const reads = Number(values.reads);
if (![records, reads].every((n) => Number.isInteger(n) && n > 0)) {
  console.error('bench:task-reads: --records and --reads must be positive integers');
  process.exit(2);
}
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** A request and how long it took. */
async function rpc(url: string, method: string, params: Record<string, unknown>) {
  const started = performance.now();
  const result = await statelessRpc(url, method, params, {
    name: 'bench-task-reads',
    capabilities: { ...TASKS, elicitation: { form: {} } },
  });
  return { result, ms: performance.now() - started };
}

async function readTimes(url: string, taskId: string): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < reads; i++) {
    const { result, ms } = await rpc(url, 'tasks/get', { taskId });
    if (result['status'] !== 'input_required')
      throw new Error(`the task is ${String(result['status'])}`);
    times.push(ms);
  }
  times.sort((a, b) => a - b);
  return { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)) };
}

const env = {
  ...process.env,
  TIDEMARK_LOG_LEVEL: 'warn',
  TIDEMARK_SECRET: randomBytes(32).toString('hex'),
};
const kafka = await resolveKafka({ log: (line) => console.error(line) });
let row: Record<string, unknown>;
try {
  const flags = await benchTopics(kafka.brokers, 'task-reads');
  const prefix = flags[flags.indexOf('--prefix') + 1]!;
  const stack = await startWorkerAndGateway(flags, env, {
    worker: ['--tools', '@tidemark/examples/interactive'],
  });
  const log = new KafkaLog({ brokers: kafka.brokers });
  try {
    const created = await rpc(stack.url, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'staging' },
    });
    const taskId = String(created.result['taskId']);
    for (let i = 0; ; i++) {
      const { result } = await rpc(stack.url, 'tasks/get', { taskId });
      if (result['status'] === 'input_required') break;
      if (i > 200) throw new Error('the task never asked for input');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const quiet = await readTimes(stack.url, taskId);
    // Other sessions' traffic on the task's partition of `events`.
    const topics = topicNames(prefix);
    const partition = partitionForSession(taskId as never, await log.partitionCount(topics.events));
    const value = Buffer.from(
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}',
    );
    const writeStarted = Date.now();
    for (let written = 0; written < records; written += 5_000)
      await log.append(
        topics.events,
        Array.from({ length: Math.min(5_000, records - written) }, (_, i) => ({
          partition,
          key: `someone-else-${(written + i) % 1_000}`,
          value,
        })),
      );
    const writeSeconds = round((Date.now() - writeStarted) / 1000, 1);
    const busy = await readTimes(stack.url, taskId);
    row = { records, reads, quiet, busy, writeSeconds };
  } finally {
    await log.close();
    for (const { child } of stack.processes.reverse()) await child.stop();
  }
} finally {
  await kafka.stop();
}
const r = row as {
  quiet: { p50: number; p99: number };
  busy: { p50: number; p99: number };
  writeSeconds: number;
};
console.log(
  [
    `tasks/get of a task waiting for its user, on Kafka (a worker and a gateway): ${reads} reads each`,
    '',
    "| the task's partition of events | p50 | p99 |",
    '| --- | --- | --- |',
    `| quiet | ${r.quiet.p50} ms | ${r.quiet.p99} ms |`,
    `| + ${records.toLocaleString('en')} records of other sessions (written in ${r.writeSeconds} s) | ${r.busy.p50} ms | ${r.busy.p99} ms |`,
  ].join('\n'),
);
writeResult(values.out, { machine: machine(), ...row });
