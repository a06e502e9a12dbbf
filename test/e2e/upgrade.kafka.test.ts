import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { CallLoad } from '../support/call-load.js';
import { previousRelease } from '../support/prerequisites.js';
import { Cluster, sleep, type Member } from './cluster.js';

// A rolling upgrade from the previous release (releases/previous.json, built from git history or
// the archive beside it): its gateways and workers run on the same topics beside this tree's, then are replaced
// one at a time as Kubernetes rolls a Deployment — the new one starts, the old one gets SIGTERM —
// while clients of the official SDK call a tool throughout. Nothing fails and nothing is silently
// wrong: every call ends with its exact result and its progress is one run without a splice, gap
// or repeat across the versions — or told of a reset first (a call its old worker gave up is
// reset, then runs again: allowed, and counted). docs/upgrades.md says what each release reads and writes.

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

describe('rolling upgrade: the previous release and this one on the same topics', () => {
  it('mixed gateways and workers, then every old one replaced: 0 failed, every result exact', async () => {
    const { dir } = previousRelease();
    const c = await Cluster.start({
      brokers,
      label: 'upgrade',
      partitions: 4,
      gateways: 1,
      workers: 2,
      release: dir,
    });
    onTestFinished(() => c.stop());
    route(c, c.gateways);
    const load = new CallLoad(c.url, 4);
    await load.start();
    onTestFinished(() => load.stop());
    const calls = () => load.records.length;
    // Each phase must see its calls end: a phase in which calls stopped ending is a failure here,
    // not hidden by the run's total.
    const callsFor = async (n: number) => {
      const target = calls() + n;
      await until(() => calls() >= target, `${n} more calls to end (${calls()} so far)`);
    };
    await callsFor(4);
    const [oldGateway] = c.gateways as [Member];
    const oldWorkers = [...c.workers];
    // Mixed: a gateway and a worker of this tree join the old ones.
    const newGateway = await c.startGateway();
    route(c, [oldGateway, newGateway]);
    const newWorker = await c.startWorker();
    await c.assigned();
    // One group of both protocols: the new worker (consumer protocol) is given partitions beside
    // the old ones (classic).
    await until(() => assignedOf(newWorker).length > 0, 'the new worker to get partitions');
    expect(oldWorkers.every((w) => assignedOf(w).length > 0)).toBe(true);
    await callsFor(8);
    // Rolled: each old worker replaced (a new one first), then the old gateway.
    for (const old of oldWorkers) {
      await c.startWorker();
      await c.kill(old, 'SIGTERM');
      await c.assigned();
      await callsFor(4);
    }
    route(c, [newGateway, await c.startGateway()]);
    await c.kill(oldGateway, 'SIGTERM');
    await callsFor(8);
    await load.stop();
    const totals = load.totals();
    expect({ failed: totals.failed, failures: totals.failures }).toEqual({
      failed: 0,
      failures: [],
    });
    expect(totals.calls).toBeGreaterThanOrEqual(32);
    console.log(`rolling upgrade: ${totals.calls} calls, ${totals.reset} reset, 0 failed`);
  });
});
