import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { CallLoad } from '../support/call-load.js';
import { previousRelease } from '../support/prerequisites.js';
import { Cluster, sleep, type Member } from './cluster.js';

// A rolling upgrade from the previous release (releases/previous.json, built from git history or
// the archive beside it), and the rollback back to it: the running release's gateways and workers
// are joined on the same topics by the other release's, then replaced one at a time as Kubernetes
// rolls a Deployment — the new one starts, the old one gets SIGTERM — while clients of the official
// SDK call a tool throughout. Nothing fails and nothing is silently wrong: every call ends with its
// exact result and its progress is one run without a splice, gap or repeat across the versions — or
// told of a reset first (a call whose worker of the previous release stopped is reset, then runs
// again: allowed, and counted). docs/upgrades.md says what each release reads and writes.

const brokers = inject('kafkaBrokers');

const assignedOf = (worker: Member): number[] =>
  (worker.process.events.findLast((e) => Array.isArray(e['assigned']))?.['assigned'] as
    number[] | undefined) ?? [];

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Routes new client connections over `gateways` (a Service's endpoints). */
function route(c: Cluster, gateways: readonly Member[]): void {
  c.balancer.pool = gateways.map((g) => g.port);
}

const isPrevious = (member: Member) => member.name.endsWith('-previous');

/**
 * The chart's liveness probe, for workers of the previous release: 0.1.0 stops reading a partition
 * when a rebalance refuses its first read of the committed offset (ILLEGAL_GENERATION; this release
 * asks again), and its `/healthz` then answers "stalled partitions" until the kubelet restarts it.
 * Here a worker that says so is restarted in place; stopping it says how many were.
 */
function kubelet(c: Cluster, release: string): () => Promise<number> {
  const restarts: Array<Promise<unknown>> = [];
  const restarted = new Set<Member>();
  const timer = setInterval(() => {
    for (const worker of c.workers.filter(isPrevious)) {
      if (restarted.has(worker) || !/partition \d+ stopped/.test(worker.process.stderr.join('')))
        continue;
      restarted.add(worker);
      console.log(`kubelet: ${worker.name} is not alive (a stopped partition): restarted`);
      restarts.push(c.kill(worker, 'SIGTERM').then(() => c.startWorker(release)));
    }
  }, 250);
  return async () => {
    clearInterval(timer);
    await Promise.all(restarts);
    return restarted.size;
  };
}

interface Roll {
  label: string;
  /** The release the cluster runs first: a built checkout, or undefined for this tree. */
  from: string | undefined;
  /** The release it is rolled to. */
  to: string | undefined;
  /**
   * This release's workers are first rolled onto the classic protocol with no handoff
   * (`--group-protocol classic --handoff-timeout 0`): the first step of a rollback to 0.1.0, whose
   * classic members stall in a group on the consumer protocol and which runs a call it is given
   * at once, beside the one a handoff would have kept running (docs/upgrades.md).
   */
  rollbackReady?: boolean;
}

const ROLLBACK_READY = { TIDEMARK_TEST_GROUP_PROTOCOL: 'classic', TIDEMARK_TEST_HANDOFF_MS: '0' };

/** Runs `from` under load, mixes in `to`, rolls every member over to it; the load's totals. */
async function roll({ label, from, to, rollbackReady = false }: Roll) {
  const c = await Cluster.start({
    brokers,
    label,
    partitions: 4,
    gateways: 1,
    workers: 2,
    // Ids a client may resume with on a gateway of either release (docs/upgrades.md).
    eventIdVersion: 1,
    ...(from === undefined ? {} : { release: from }),
  });
  onTestFinished(() => c.stop());
  const liveness = kubelet(c, previousRelease().dir);
  onTestFinished(() => liveness().then(() => undefined));
  route(c, c.gateways);
  const load = new CallLoad(c.url, 4);
  await load.start();
  onTestFinished(() => load.stop());
  const calls = () => load.records.length;
  const phases: string[] = [];
  const phase = (what: string) => phases.push(`  ${new Date().toISOString()} ${what}`);
  // Each phase must see its calls end: a phase in which calls stopped ending is a failure here,
  // not hidden by the run's total.
  const callsFor = async (n: number) => {
    const target = calls() + n;
    await until(
      () => calls() >= target,
      `${n} more calls to end (${calls()} so far; ${c.workers.map((w) => `${w.name} owns ${JSON.stringify(assignedOf(w))}`).join(', ')}; gateways ${c.gateways.map((g) => g.name).join(', ')})`,
    );
  };
  await callsFor(4);
  if (rollbackReady)
    for (const consumer of [...c.workers]) {
      phase(
        `${(await c.startWorker(undefined, ROLLBACK_READY)).name} started (classic, no handoff)`,
      );
      await c.kill(consumer, 'SIGTERM');
      phase(`${consumer.name} stopped`);
      await c.assigned();
      await callsFor(2);
    }
  const [oldGateway] = c.gateways as [Member];
  const isOld = (member: Member) => isPrevious(member) === (from !== undefined);
  // Mixed: a gateway and a worker of the other release join.
  const newGateway = await c.startGateway(to);
  route(c, [oldGateway, newGateway]);
  const newWorker = await c.startWorker(to);
  phase(`${newGateway.name} and ${newWorker.name} started`);
  await c.assigned();
  // One group of both protocols (0.1.0 is classic, this release the consumer protocol where the
  // brokers allow its session timeout): the new worker is given partitions beside the old ones.
  await until(() => assignedOf(newWorker).length > 0, 'the new worker to get partitions');
  await callsFor(8);
  // Rolled: each old worker replaced (a new one first, and one the liveness probe restarted too),
  // then the old gateway.
  for (let old = c.workers.find(isOld); old !== undefined; old = c.workers.find(isOld)) {
    phase(`${(await c.startWorker(to)).name} started`);
    await c.kill(old, 'SIGTERM');
    phase(`${old.name} stopped`);
    await c.assigned();
    await callsFor(4);
  }
  route(c, [newGateway, await c.startGateway(to)]);
  await c.kill(oldGateway, 'SIGTERM');
  phase(`${oldGateway.name} replaced`);
  await callsFor(8);
  await load.stop();
  const totals = load.totals();
  // A failed call's evidence: what every process printed about its session, phases marked.
  for (const record of load.records.filter((r) => r.failed !== undefined))
    console.error(
      [
        `failed call ${new Date(record.startAt).toISOString()}–${new Date(record.endAt).toISOString()} (${record.failed}), session ${record.session}`,
        ...phases,
        ...c.linesMentioning(record.session).map((line) => line.slice(0, 300)),
      ].join('\n'),
    );
  expect({ failed: totals.failed, failures: totals.failures }).toEqual({
    failed: 0,
    failures: [],
  });
  expect(totals.calls).toBeGreaterThanOrEqual(32);
  return { ...totals, restarts: await liveness() };
}

describe('the previous release and this one on the same topics', () => {
  it('a rolling upgrade: mixed gateways and workers, then every old one replaced: 0 failed, every result exact', async () => {
    const totals = await roll({ label: 'upgrade', from: previousRelease().dir, to: undefined });
    console.log(
      `rolling upgrade: ${totals.calls} calls, ${totals.reset} reset, 0 failed, ${totals.restarts} workers of the previous release restarted by their liveness probe`,
    );
  }, 180_000);

  it('a rolling rollback: this release’s workers rolled onto the classic protocol with no handoff, then its gateways and workers replaced by the previous release’s one at a time: 0 failed, every result exact or reset first', async () => {
    const totals = await roll({
      label: 'rollback',
      from: undefined,
      to: previousRelease().dir,
      rollbackReady: true,
    });
    console.log(
      `rolling rollback: ${totals.calls} calls, ${totals.reset} reset, 0 failed, ${totals.restarts} workers of the previous release restarted by their liveness probe`,
    );
  }, 180_000);
});
