// `npm run bench:takeover`: how long a call waits after its worker dies (kill -9) before another
// worker runs it again — the consumer group's session timeout, measured at the default and the
// shorter ones — and how long a drained worker's (SIGTERM) partitions take to move. Two worker
// processes on a real broker; calls written straight to `requests`. First on a broker with Kafka's
// own group settings (group.consumer.min.session.timeout.ms 45 s, as managed clusters keep it: the
// workers' `auto` protocol falls back to classic to keep 10 s), then on the test broker, which
// lets the consumer protocol go down to 1 s. Writes docs/benchmarks/takeover.json.
//
//   npm run bench:takeover                 # Kafka's defaults at 10 s; 10 s, 3 s and 1 s; 3 kills each
//   npm run bench:takeover -- --smoke      # Kafka's defaults at 10 s, one kill
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { KafkaLog } from '@tidemark/kafka';
import { resolveKafka, startDedicatedBroker } from '@tidemark/kafka-fixtures';
import { Cluster, type Member } from '../e2e/cluster.ts';
import { LogClient } from '@tidemark/fixtures/log-client';
import { machine, round } from './support.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/benchmarks/takeover.json' },
  },
});
/** Kafka's own bounds of a consumer-protocol session (the test broker lowers them). */
const KAFKA_DEFAULTS =
  'group.consumer.min.session.timeout.ms=45000\ngroup.consumer.min.heartbeat.interval.ms=5000\n';
const ROUNDS: ReadonlyArray<{ broker: 'kafka defaults' | 'test'; sessionMs: number }> = [
  { broker: 'kafka defaults', sessionMs: 10_000 },
  ...(values.smoke
    ? []
    : [10_000, 3_000, 1_000].map((sessionMs) => ({ broker: 'test' as const, sessionMs }))),
];
const KILLS = values.smoke ? 1 : 3;

interface Trial {
  /** kill -9 of the call's worker → the other worker starts the call's next generation. */
  takeoverMs: number;
  /** SIGTERM of a worker → the other worker owns every partition. */
  drainMoveMs: number;
  /** The group protocol the workers joined with (`auto` says when it falls back to classic). */
  protocol: 'consumer' | 'classic';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`takeover bench: no ${what} in ${timeoutMs} ms`);
    await sleep(10);
  }
}

const assignedOf = (worker: Member): number[] =>
  (worker.process.events.findLast((e) => Array.isArray(e['assigned']))?.['assigned'] as
    number[] | undefined) ?? [];

/** One kill -9 and one SIGTERM on a fresh pair of workers. */
async function trial(brokers: readonly string[], sessionMs: number): Promise<Trial> {
  const cluster = await Cluster.start({
    brokers,
    label: 'takeover',
    gateways: 0,
    workers: 2,
    groupSessionTimeoutMs: sessionMs,
  });
  const log = new KafkaLog({ brokers });
  try {
    const [a, b] = cluster.workers as [Member, Member];
    await until(() => assignedOf(a).length === 1 && assignedOf(b).length === 1, 60_000, 'split');
    let client = new LogClient(log, cluster.names, cluster.partitions);
    while (!assignedOf(a).includes(client.partition)) {
      client.close();
      client = new LogClient(log, cluster.names, cluster.partitions);
    }
    await client.initialize();
    const call = client.call(1, 'count', { to: 100_000, delayMs: 20 });
    await call.sent;
    const started = (w: Member, cause: string) =>
      w.process.events.some((e) => {
        const execution = e['execution'] as { stream?: string; cause?: string } | undefined;
        return execution?.stream === 'n1' && execution.cause === cause;
      });
    await until(() => started(a, 'first'), 30_000, 'first execution');
    const killedAt = Date.now();
    await cluster.kill(a, 'SIGKILL');
    await until(() => started(b, 'takeover'), 120_000, 'takeover');
    const takeoverMs = Date.now() - killedAt;
    client.close();
    // A drain: a third worker joins, takes a partition, then is stopped with SIGTERM.
    const c = await cluster.startWorker();
    await until(
      () => assignedOf(c).length === 1 && assignedOf(b).length === 1,
      60_000,
      'rebalance',
    );
    const drainedAt = Date.now();
    const draining = cluster.kill(c, 'SIGTERM');
    await until(() => assignedOf(b).length === 2, 60_000, 'move after the drain');
    const drainMoveMs = Date.now() - drainedAt;
    await draining;
    const classic = cluster.workers.some((w) =>
      w.process.stderr.join('').includes('joining with the classic protocol'),
    );
    return { takeoverMs, drainMoveMs, protocol: classic ? 'classic' : 'consumer' };
  } finally {
    await log.close();
    await cluster.stop();
  }
}

const kafka = await resolveKafka({ log: (line) => console.error(line) });
const defaults = await startDedicatedBroker({ config: () => KAFKA_DEFAULTS });
try {
  const rows = [];
  for (const { broker, sessionMs } of ROUNDS) {
    const brokers = broker === 'test' ? kafka.brokers : defaults.brokers;
    const trials: Trial[] = [];
    for (let i = 0; i < KILLS; i++) trials.push(await trial(brokers, sessionMs));
    const takeovers = trials.map((t) => t.takeoverMs).sort((x, y) => x - y);
    const moves = trials.map((t) => t.drainMoveMs).sort((x, y) => x - y);
    const row = {
      broker,
      groupSessionTimeoutMs: sessionMs,
      protocol: trials[0]!.protocol,
      kills: trials.length,
      takeoverMedianS: round(takeovers[Math.floor(takeovers.length / 2)]! / 1000, 2),
      takeoverMaxS: round(takeovers.at(-1)! / 1000, 2),
      drainMoveMedianS: round(moves[Math.floor(moves.length / 2)]! / 1000, 2),
    };
    rows.push(row);
    console.log(
      `${broker} broker, session timeout ${sessionMs / 1000} s (${row.protocol} protocol): kill -9 → takeover median ${row.takeoverMedianS} s (max ${row.takeoverMaxS} s over ${trials.length}); SIGTERM → partitions moved in ${row.drainMoveMedianS} s`,
    );
  }
  writeFileSync(values.out, `${JSON.stringify({ machine: machine(), rows }, null, 2)}\n`);
  console.log(`takeover bench: wrote ${values.out}`);
} finally {
  await defaults.destroy();
  await kafka.stop();
}
