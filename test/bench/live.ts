// Live delivery: events/s from the tool through the server to N SSE clients, and the latency from
// the tool's emit to the client's read, for each target; plus the floor — the same messages
// produced to Kafka and fetched back with the same client library, no MCP at all — and the
// ceiling: the same events written as pre-framed bytes by a process that does nothing else.
import { KafkaLog, provisionTopics } from '@tidemark/kafka';
import { PartitionTail } from '@tidemark/log';
import { randomBytes } from 'node:crypto';
import { nowMs, Session } from './load.ts';
import { median, percentile, round } from './support.ts';
import { cpuMs, RAW_SOCKET, startTarget, type Target, type TargetName } from './targets.ts';

const FLOOR_BATCH = 100;

export interface LiveOptions {
  targets: readonly TargetName[];
  clients: readonly number[];
  /** Events per throughput run (spread over the clients). */
  events: number;
  /** Ticks per client in the paced latency run, one every `paceMs`. */
  pacedTicks: number;
  paceMs: number;
  /**
   * Rounds: every target is measured once per round, the targets interleaved, so a slow minute of
   * a shared machine falls on every target alike; a row is the median of its rounds.
   */
  rounds: number;
  brokers?: readonly string[];
}

export interface LiveRow {
  target: string;
  clients: number;
  eventsPerSec: number;
  latencyMs: { p50: number; p99: number; p999: number };
  /** CPU used during the throughput run, in cores: the servers', and the load generator's. */
  serverCores: number;
  loadCores: number;
  /** Of the server cores, the gateways' (Kafka targets). */
  gatewayCores?: number;
  /** Each round's events/s and server cores, in round order (a ratio pairs rounds). */
  runs?: Array<{ eventsPerSec: number; serverCores: number }>;
}

async function sessions(target: Target, count: number): Promise<Session[]> {
  const all: Session[] = [];
  for (let i = 0; i < count; i += 50)
    all.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, count - i) }, async (_, j) => {
          const session = new Session(target.urls[(i + j) % target.urls.length]!);
          await session.initialize();
          return session;
        }),
      )),
    );
  return all;
}

async function measure(target: Target, clients: number, options: LiveOptions): Promise<LiveRow> {
  const all = await sessions(target, clients);
  await Promise.all(all.map((s) => s.ticker(5, 0))); // warm-up
  const perClient = Math.max(1, Math.floor(options.events / clients));
  const pids = target.processes.map((p) => p.child.pid!);
  const gatewayPids = (target.gateways ?? []).map((p) => p.child.pid!);
  const cpuBefore = pids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const gatewayBefore = gatewayPids.reduce((sum, pid) => sum + cpuMs(pid), 0);
  const loadBefore = process.cpuUsage();
  const started = performance.now();
  const counts = await Promise.all(all.map((s) => s.ticker(perClient, 0)));
  const elapsed = performance.now() - started;
  const load = process.cpuUsage(loadBefore);
  const cpu = pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - cpuBefore;
  const gatewayCpu = gatewayPids.reduce((sum, pid) => sum + cpuMs(pid), 0) - gatewayBefore;
  const received = counts.reduce((sum, c) => sum + c.ticks, 0);
  // Paced: latency when the server is not saturated.
  const latencies: number[] = [];
  await Promise.all(
    all.map((s) =>
      s.ticker(options.pacedTicks, options.paceMs, (t) =>
        latencies.push(t.receivedMs - t.emittedMs),
      ),
    ),
  );
  latencies.sort((a, b) => a - b);
  return {
    target: target.name,
    clients,
    eventsPerSec: round(received / (elapsed / 1000), 0),
    latencyMs: {
      p50: round(percentile(latencies, 50)),
      p99: round(percentile(latencies, 99)),
      p999: round(percentile(latencies, 99.9)),
    },
    serverCores: round(cpu / elapsed),
    loadCores: round((load.user + load.system) / 1000 / elapsed),
    ...(gatewayPids.length === 0 ? {} : { gatewayCores: round(gatewayCpu / elapsed) }),
  };
}

/** The floor: records produced to Kafka one by one and read back by a tail, same library. */
async function floor(
  brokers: readonly string[],
  clients: number,
  options: LiveOptions,
): Promise<LiveRow> {
  const prefix = `bench-floor-${randomBytes(4).toString('hex')}.`;
  const { names } = await provisionTopics(
    { brokers },
    { prefix, partitions: 1, replicationFactor: 1 },
  );
  const log = new KafkaLog({ brokers: [...brokers] });
  try {
    const tail = new PartitionTail({
      port: log,
      topic: names.events,
      partition: 0,
      maxWaitMs: 500,
    });
    // Unpaced, each client produces batches of FLOOR_BATCH records (what the library can move);
    // paced, one record at a time (the latency of one produce → fetch).
    const run = async (perClient: number, paceMs: number, latencies?: number[]) => {
      const total = perClient * clients;
      let received = 0;
      const start = (await log.offsets(names.events, 0)).highWatermark;
      const done = new Promise<void>((resolve, reject) => {
        const sub = tail.subscribe(start, {
          onRecords: (records) => {
            const at = nowMs();
            for (const r of records) latencies?.push(at - Number(Buffer.from(r.value!).toString()));
            received += records.length;
            if (received >= total) {
              sub.close();
              resolve();
            }
          },
          onError: reject,
        });
      });
      const started = performance.now();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          const batch = paceMs > 0 ? 1 : FLOOR_BATCH;
          for (let i = 0; i < perClient; i += batch) {
            const n = Math.min(batch, perClient - i);
            await log.append(
              names.events,
              Array.from({ length: n }, () => ({
                partition: 0,
                key: 'k',
                value: Buffer.from(String(nowMs())),
              })),
            );
            if (paceMs > 0) await new Promise((resolve) => setTimeout(resolve, paceMs));
          }
        }),
      );
      await done;
      return performance.now() - started;
    };
    const loadBefore = process.cpuUsage();
    const perClient = Math.max(1, Math.floor(options.events / clients));
    const elapsed = await run(perClient, 0);
    const load = process.cpuUsage(loadBefore);
    const latencies: number[] = [];
    await run(options.pacedTicks, options.paceMs, latencies);
    tail.close();
    latencies.sort((a, b) => a - b);
    return {
      target: 'kafka-floor',
      clients,
      eventsPerSec: round((perClient * clients) / (elapsed / 1000), 0),
      latencyMs: {
        p50: round(percentile(latencies, 50)),
        p99: round(percentile(latencies, 99)),
        p999: round(percentile(latencies, 99.9)),
      },
      serverCores: 0,
      loadCores: round((load.user + load.system) / 1000 / elapsed),
    };
  } finally {
    await log.close();
  }
}

/** One row from a target's rounds: the median of each figure, with every round kept. */
function combine(rounds: readonly LiveRow[]): LiveRow {
  const first = rounds[0]!;
  const mid = (pick: (r: LiveRow) => number) => round(median(rounds.map(pick)));
  const gateway = rounds.map((r) => r.gatewayCores).filter((c) => c !== undefined);
  return {
    target: first.target,
    clients: first.clients,
    eventsPerSec: Math.round(median(rounds.map((r) => r.eventsPerSec))),
    latencyMs: {
      p50: mid((r) => r.latencyMs.p50),
      p99: mid((r) => r.latencyMs.p99),
      p999: mid((r) => r.latencyMs.p999),
    },
    serverCores: mid((r) => r.serverCores),
    loadCores: mid((r) => r.loadCores),
    ...(gateway.length === 0 ? {} : { gatewayCores: round(median(gateway)) }),
    runs: rounds.map((r) => ({ eventsPerSec: r.eventsPerSec, serverCores: r.serverCores })),
  };
}

export async function runLive(options: LiveOptions): Promise<LiveRow[]> {
  const targets: Target[] = [];
  const measured = new Map<string, LiveRow[]>();
  const keep = (row: LiveRow) => {
    const key = `${row.target} ${row.clients}`;
    measured.set(key, [...(measured.get(key) ?? []), row]);
    console.error(
      `live ${row.target} ×${row.clients}: ${row.eventsPerSec} events/s on ${row.serverCores} server cores, p50 ${row.latencyMs.p50} ms`,
    );
  };
  try {
    // Every target runs for the whole benchmark: an idle one costs its neighbours little, and
    // rounds can then take the targets in turn.
    for (const name of [...options.targets, RAW_SOCKET] as const)
      targets.push(
        await startTarget(name, { ...(options.brokers ? { brokers: options.brokers } : {}) }),
      );
    for (let r = 0; r < options.rounds; r++)
      for (const clients of options.clients) {
        for (const target of targets) keep(await measure(target, clients, options));
        if (options.brokers !== undefined) keep(await floor(options.brokers, clients, options));
      }
  } finally {
    for (const target of targets) await target.stop();
  }
  return [...measured.values()].map(combine);
}
