// What a client sees while the deployment changes size under it. Clients call a ~2 s tool back to
// back through a balancer over the gateways while workers scale 2 → 6 → 2, gateways 2 → 4 → 2, and
// then every gateway and worker is replaced one at a time (a rolling restart: the new one starts,
// then the old one gets SIGTERM — its calls handed off, its streams ended with a retry hint and
// resumed elsewhere). Per event: calls failed, calls reset, partitions moved, the p99 of the calls
// that overlapped it, and how long the group took to settle. Run by `npm run bench:scale` and
// `npm run bench` (`scale`).
import { Cluster, type ClusterOptions, type Member } from '../e2e/cluster.ts';
import { CallLoad, type CallRecord } from '../support/call-load.ts';
import { round } from './support.ts';

export interface EventRow {
  event: string;
  /** From the event's start to the group owning every partition with no handoff left (workers). */
  settleS: number;
  partitionsMoved: number;
  calls: number;
  failed: number;
  reset: number;
  p50S: number;
  p99S: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const assignedOf = (worker: Member): number[] =>
  (worker.process.events.findLast((e) => Array.isArray(e['assigned']))?.['assigned'] as
    number[] | undefined) ?? [];

/** Partition → owner, as the live workers last reported. */
function owners(cluster: Cluster): Map<number, string> {
  const map = new Map<number, string>();
  for (const worker of cluster.workers)
    for (const partition of assignedOf(worker)) map.set(partition, worker.name);
  return map;
}

function moved(before: Map<number, string>, after: Map<number, string>): number {
  let count = 0;
  for (const [partition, owner] of after) if (before.get(partition) !== owner) count++;
  return count;
}

/** Waits for every partition to be owned by exactly one live worker, each worker having some. */
async function settled(cluster: Cluster, timeoutMs = 120_000): Promise<void> {
  const partitions = cluster.partitions;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = cluster.workers.map((w) => assignedOf(w).length);
    const total = counts.reduce((a, b) => a + b, 0);
    const spread = Math.min(cluster.workers.length, partitions);
    if (total === partitions && counts.filter((c) => c > 0).length === spread) return;
    if (Date.now() > deadline)
      throw new Error(`scale bench: the group did not settle: ${counts.join(',')}`);
    await sleep(50);
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Runs `change`, then summarizes the calls that overlapped it (started before its end). */
async function event(
  { cluster, load, quietMs }: { cluster: Cluster; load: CallLoad; quietMs: number },
  name: string,
  change: () => Promise<void>,
): Promise<EventRow> {
  await sleep(quietMs);
  const before = owners(cluster);
  const startedAt = Date.now();
  await change();
  await settled(cluster);
  const settleS = (Date.now() - startedAt) / 1000;
  const endedAt = Date.now();
  await sleep(quietMs);
  const overlapping = load.records.filter(
    (r: CallRecord) => r.endAt >= startedAt && r.startAt <= endedAt,
  );
  const durations = overlapping.map((r) => (r.endAt - r.startAt) / 1000).sort((a, b) => a - b);
  const row: EventRow = {
    event: name,
    settleS: round(settleS, 2),
    partitionsMoved: moved(before, owners(cluster)),
    calls: overlapping.length,
    failed: overlapping.filter((r) => r.failed !== undefined).length,
    reset: overlapping.filter((r) => r.resets > 0).length,
    p50S: round(percentile(durations, 50), 2),
    p99S: round(percentile(durations, 99), 2),
  };
  console.log(
    `${name}: settled in ${row.settleS} s, ${row.partitionsMoved} partitions moved; ` +
      `${row.calls} calls overlapped: ${row.failed} failed, ${row.reset} reset, ` +
      `p50 ${row.p50S} s, p99 ${row.p99S} s`,
  );
  return row;
}

/** Starts a gateway and puts it behind the balancer. */
async function addGateway(cluster: Cluster): Promise<void> {
  await cluster.startGateway();
  cluster.balancer.pool = cluster.gateways.map((g) => g.port);
}

/** Takes a gateway out of the balancer (as endpoints do), then drains it (SIGTERM). */
async function drainGateway(cluster: Cluster, gateway: Member): Promise<void> {
  cluster.balancer.pool = cluster.gateways.filter((g) => g !== gateway).map((g) => g.port);
  await cluster.kill(gateway, 'SIGTERM');
}

/** The sizes of a run: the full one, or the smoke one `npm test` runs. */
function scaleSizes(smoke: boolean) {
  return {
    partitions: smoke ? 4 : 12,
    clients: smoke ? 4 : 12,
    workersPeak: smoke ? 3 : 6,
    gatewaysPeak: smoke ? 3 : 4,
    /** Quiet time around each event, so the calls that overlap it are told apart from steady ones. */
    quietMs: smoke ? 3_000 : 8_000,
  };
}

/** Every scale event in turn, under load, on fresh topics of `brokers`. */
export async function runScale({
  brokers,
  smoke,
  layout,
}: {
  brokers: readonly string[];
  smoke: boolean;
  /** Topic settings beyond the cluster's defaults (a three-broker cluster's replication). */
  layout?: ClusterOptions['layout'];
}) {
  const sizes = scaleSizes(smoke);
  const cluster = await Cluster.start({
    brokers,
    label: 'scale',
    partitions: sizes.partitions,
    gateways: 2,
    workers: 2,
    ...(layout === undefined ? {} : { layout }),
  });
  cluster.balancer.pool = cluster.gateways.map((g) => g.port);
  const load = new CallLoad(cluster.url, sizes.clients);
  const at = { cluster, load, quietMs: sizes.quietMs };
  const { workersPeak, gatewaysPeak } = sizes;
  const rows: EventRow[] = [];
  try {
    await load.start();
    await settled(cluster);
    rows.push(
      await event(at, `workers 2 → ${workersPeak}`, async () => {
        while (cluster.workers.length < workersPeak) await cluster.startWorker();
      }),
    );
    rows.push(
      await event(at, `workers ${workersPeak} → 2`, async () => {
        while (cluster.workers.length > 2) await cluster.kill(cluster.workers.at(-1)!, 'SIGTERM');
      }),
    );
    rows.push(
      await event(at, `gateways 2 → ${gatewaysPeak}`, async () => {
        while (cluster.gateways.length < gatewaysPeak) await addGateway(cluster);
      }),
    );
    rows.push(
      await event(at, `gateways ${gatewaysPeak} → 2`, async () => {
        while (cluster.gateways.length > 2) await drainGateway(cluster, cluster.gateways[0]!);
      }),
    );
    rows.push(
      await event(at, 'rolling restart of every gateway and worker', async () => {
        for (const old of [...cluster.gateways]) {
          await addGateway(cluster);
          await drainGateway(cluster, old);
        }
        for (const old of [...cluster.workers]) {
          await cluster.startWorker();
          await cluster.kill(old, 'SIGTERM');
          await settled(cluster);
        }
      }),
    );
    return { partitions: sizes.partitions, clients: sizes.clients, rows, totals: load.totals() };
  } finally {
    await load.stop();
    await cluster.stop();
  }
}
