import {
  Admin,
  ConnectionPool,
  describeQuorumV2,
  ProduceAcks,
  Producer,
} from '@platformatic/kafka';
import { partitionForSession } from '@tidemark/protocol';
import { startDedicatedCluster, type DedicatedCluster } from '@tidemark/kafka-fixtures';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TrackedClient, type CheckedCall } from './calls.js';
import { Cluster, sleep, type ClusterOptions } from './cluster.js';
import { runScale } from '../bench/scale-events.js';

// The faults of a real production cluster: three KRaft nodes (each a broker and a controller
// voter), topics with replication factor 3 and min.insync.replicas 2, Tidemark's producers
// idempotent with acks=all. Gateway and worker processes run on it, driven by the official client;
// the checker classifies every call. What the client was told in each case is asserted.

let kafka: DedicatedCluster;

beforeAll(async () => {
  kafka = await startDedicatedCluster({ nodes: 3, minInsyncReplicas: 2 });
}, 240_000);

afterAll(async () => {
  await kafka?.destroy();
}, 60_000);

async function cluster(options: Omit<ClusterOptions, 'brokers'>) {
  const started = await Cluster.start({
    brokers: kafka.brokers,
    ...options,
    layout: { replicationFactor: 3, ...options.layout },
  });
  onTestFinished(() => started.stop());
  return started;
}

async function client(c: Cluster, name: string): Promise<TrackedClient> {
  const tracked = await TrackedClient.connect(c.url, name);
  onTestFinished(() => tracked.close());
  return tracked;
}

const logsOf = (c: Cluster) =>
  [...c.workers, ...c.gateways]
    .map(
      (m) =>
        `${m.name}:\n${m.process.stderr.join('').slice(-2_000)}\n${m.process.events
          .filter((e) => e['err'] !== undefined)
          .slice(-5)
          .map((e) => JSON.stringify(e).slice(0, 1_500))
          .join('\n')}`,
    )
    .join('\n');

/** The outcome; otherwise what was seen and what the processes said (a useful failure). */
const outcomeOf = (call: CheckedCall, c: Cluster) =>
  call.verdict.outcome === 'exact' || call.verdict.outcome === 'reset'
    ? call.verdict.outcome
    : `${call.verdict.outcome}: ${call.verdict.why ?? ''} ${JSON.stringify(call.seen.slice(-3))}\n${logsOf(c)}`;

/** The node leading a partition now. */
async function leaderOf(topic: string, partition: number): Promise<number> {
  const admin = new Admin({
    clientId: 'tidemark-test-leader',
    bootstrapBrokers: [...kafka.brokers],
  });
  try {
    const metadata = await admin.metadata({ topics: [topic], forceUpdate: true });
    return metadata.topics.get(topic)!.partitions[partition]!.leader;
  } finally {
    await admin.close();
  }
}

/** The partition's ISR once it no longer holds `node` (polled from the brokers' metadata). */
async function isrWithout(topic: string, partition: number, node: number): Promise<number[]> {
  const admin = new Admin({ clientId: 'tidemark-test-isr', bootstrapBrokers: [...kafka.brokers] });
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const metadata = await admin.metadata({ topics: [topic], forceUpdate: true });
      const isr = metadata.topics.get(topic)!.partitions[partition]!.isr;
      if (!isr.includes(node)) return isr;
      if (Date.now() > deadline) throw new Error(`node ${node} still in the ISR ${isr.join(',')}`);
      await sleep(250);
    }
  } finally {
    await admin.close();
  }
}

/** What the partition's leader answers one acks=all write of a probe record (no retries). */
async function refusedWrite(topic: string, partition: number): Promise<string> {
  const producer = new Producer({
    clientId: 'tidemark-test-isr-probe',
    bootstrapBrokers: [...kafka.brokers],
    idempotent: false,
    retries: 0,
  });
  try {
    // acks is a send option (a client-level one is not applied to sends).
    await producer.send({
      messages: [{ topic, partition, key: Buffer.from('isr-probe'), value: Buffer.from('probe') }],
      acks: ProduceAcks.ALL,
    });
    return 'written';
  } catch (error) {
    return JSON.stringify(error, Object.getOwnPropertyNames(error)) + String(error);
  } finally {
    await producer.close();
  }
}

/** The active controller of the KRaft quorum (the leader of `__cluster_metadata`). */
async function activeController(): Promise<number> {
  const pool = new ConnectionPool('tidemark-test-quorum');
  try {
    for (const node of kafka.nodes.filter((n) => n.running)) {
      const connection = await pool.get({ host: '127.0.0.1', port: node.port });
      const answer = await describeQuorumV2.api.async(connection, [
        { topicName: '__cluster_metadata', partitions: [{ partitionIndex: 0 }] },
      ]);
      const leader = answer.topics[0]?.partitions[0]?.leaderId;
      if (leader !== undefined && leader >= 0) return leader;
    }
    throw new Error('no node knows the quorum leader');
  } finally {
    await pool.close();
  }
}

/** Exact or reset: the client was told; anything else fails with what the processes said. */
function expectTold(call: CheckedCall, c: Cluster): void {
  const outcome = outcomeOf(call, c);
  if (outcome !== 'exact' && outcome !== 'reset') throw new Error(outcome);
  // What the client was told, for the run's log: exact, or reset (with the reasons).
  const resets = call.seen.flatMap((s) => (s.kind === 'reset' ? [s.reason] : []));
  console.info(`${c.prefix} → ${outcome}${resets.length > 0 ? ` (${resets.join(', ')})` : ''}`);
}

/** A new session's call is exact; anything else fails with what the processes said. */
async function expectNextCallExact(c: Cluster, name: string): Promise<void> {
  let outcome: string;
  try {
    const after = await client(c, name);
    outcome = outcomeOf(await after.call({ to: 10, delayMs: 10, timeoutMs: 120_000 }), c);
  } catch (error) {
    outcome = `${String(error)}\n${logsOf(c)}`;
  }
  if (outcome !== 'exact') throw new Error(outcome);
}

const node = (id: number) => kafka.nodes.find((n) => n.id === id)!;

/** Every node running again (a scenario restores what it broke; the next one starts whole). */
async function restoreAll(): Promise<void> {
  await Promise.all(kafka.nodes.filter((n) => !n.running).map((n) => n.start()));
}

describe('a three-broker cluster (replication 3, min.insync.replicas 2)', () => {
  it('kill -9 of the leader of the partition a call streams on: the call ends exact or reset, never wrong; the next call is exact', async () => {
    const c = await cluster({ label: 'mb-leader', partitions: 2 });
    onTestFinished(restoreAll);
    const tracked = await client(c, 'leader');
    const partition = partitionForSession(tracked.session as never, c.partitions);
    let killed: Promise<number> | undefined;
    const call = await tracked.call({
      to: 40,
      delayMs: 100,
      timeoutMs: 180_000,
      onProgress: (value) => {
        if (value !== 5 || killed !== undefined) return;
        killed = leaderOf(c.names.events, partition).then((leader) => {
          node(leader).kill();
          return leader;
        });
      },
    });
    const victim = await killed;
    expect(victim).toBeGreaterThan(0);
    expect(node(victim!).running).toBe(false);
    // The producer and the tails follow the new leader: told (exact, or reset if the worker ran it again).
    expectTold(call, c);
    await expectNextCallExact(c, 'after-leader');
  }, 300_000);

  it('kill -9 of the active controller mid-stream: the quorum elects another, calls go on', async () => {
    const c = await cluster({ label: 'mb-controller', partitions: 2 });
    onTestFinished(restoreAll);
    const tracked = await client(c, 'controller');
    let killed: Promise<number> | undefined;
    const call = await tracked.call({
      to: 40,
      delayMs: 100,
      timeoutMs: 180_000,
      onProgress: (value) => {
        if (value !== 5 || killed !== undefined) return;
        killed = activeController().then((controller) => {
          node(controller).kill();
          return controller;
        });
      },
    });
    const victim = await killed;
    expect(node(victim!).running).toBe(false);
    expectTold(call, c);
    // A new controller leads the quorum.
    const deadline = Date.now() + 60_000;
    let controller = -1;
    while (Date.now() < deadline) {
      controller = await activeController().catch(() => -1);
      if (controller > 0 && controller !== victim) break;
      await sleep(500);
    }
    // A real answer from the quorum (not the -1 of "none found"), and another node.
    expect(controller).toBeGreaterThanOrEqual(0);
    expect(controller).not.toBe(victim);
    await expectNextCallExact(c, 'after-controller');
  }, 300_000);

  it('the ISR shrinks below min.insync.replicas mid-stream, then is restored: writes are refused meanwhile, the call waits and ends told', async () => {
    // With min.insync.replicas 3 on the topics (the cluster's default is 2), one node down is
    // enough to put every partition below it while the controller quorum (2 of 3) stays up.
    const c = await cluster({
      label: 'mb-isr',
      partitions: 2,
      layout: {
        overrides: {
          requests: { 'min.insync.replicas': '3' },
          events: { 'min.insync.replicas': '3' },
          streams: { 'min.insync.replicas': '3' },
          sessions: { 'min.insync.replicas': '3' },
        },
      },
    });
    onTestFinished(restoreAll);
    const tracked = await client(c, 'isr');
    const partition = partitionForSession(tracked.session as never, c.partitions);
    let shrunk: Promise<{ follower: number; isr: number[]; refused: string }> | undefined;
    const call = await tracked.call({
      to: 30,
      delayMs: 100,
      timeoutMs: 240_000,
      onProgress: (value) => {
        if (value !== 5 || shrunk !== undefined) return;
        shrunk = leaderOf(c.names.events, partition).then(async (leader) => {
          // A follower goes: the leader stays, its ISR shrinks to 2 < 3, and acks=all is refused.
          const follower = kafka.nodes.find((n) => n.id !== leader)!;
          follower.kill();
          try {
            // Seen, not assumed: the broker drops the follower from the ISR, then refuses a write.
            const isr = await isrWithout(c.names.events, partition, follower.id);
            const refused = await refusedWrite(c.names.events, partition);
            return { follower: follower.id, isr, refused };
          } finally {
            await follower.start();
          }
        });
      },
    });
    const { follower, isr, refused } = await shrunk!;
    expect(isr).not.toContain(follower);
    expect(isr).toHaveLength(2);
    expect(refused).toMatch(/NOT_ENOUGH_REPLICAS|fewer in-sync replicas/i);
    // While the ISR was short nothing was written; the client waited, then was told.
    expectTold(call, c);
    await expectNextCallExact(c, 'after-isr');
  }, 300_000);

  it('scale events and a rolling restart under load (workers 2 → 3 → 2, gateways 2 → 3 → 2, every one replaced): 0 failed, 0 reset', async () => {
    const { rows, totals } = await runScale({
      brokers: kafka.brokers,
      smoke: true,
      layout: { replicationFactor: 3 },
    });
    expect(totals).toMatchObject({ failed: 0, reset: 0, failures: [] });
    // Handoffs and drains: every call ends where it ran, or resumes exactly. A worker joining or
    // leaving moves partitions; a gateway does not. (The one run of `npm run bench`'s scale smoke.)
    expect(rows.map((row) => row.event)).toEqual([
      'workers 2 → 3',
      'workers 3 → 2',
      'gateways 2 → 3',
      'gateways 3 → 2',
      'rolling restart of every gateway and worker',
    ]);
    for (const row of rows) expect(row.calls).toBeGreaterThan(0);
    expect(rows[0]!.partitionsMoved).toBeGreaterThan(0);
    expect(rows[2]!.partitionsMoved).toBe(0);
  }, 300_000);
});
