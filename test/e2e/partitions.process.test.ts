import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PretendPayments } from '@tidemark/examples/payments';
import { startDedicatedBroker, type DedicatedBroker } from '@tidemark/kafka-fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Cluster, sleep, type Member } from './cluster.js';
import { TestNetwork } from '../support/netns.js';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';
import { pollTask, rpc, sseMessages } from '@tidemark/fixtures/task-client';

// Partitions of the network, for real (issue #56): the broker, two workers and two gateways each on
// a host of their own (a network namespace), the test's clients on the bridge between them. A cut
// drops packets inside a host while its process keeps running — nothing closes, nothing refuses —
// which is how a zombie is made: a worker that still runs a call whose partition has moved on.

const SESSION_TIMEOUT_MS = 6_000;
/** A cut gateway answers 503 after this long (its default is 20 s). */
const GATEWAY_LOG_TIMEOUT_MS = 5_000;
let network: TestNetwork;
let broker: DedicatedBroker;
let cluster: Cluster;
let api: PretendPayments;
let brokerAddress: string;

beforeAll(async () => {
  network = TestNetwork.create();
  const brokerHost = network.host();
  brokerAddress = brokerHost.address;
  broker = await startDedicatedBroker({ netns: brokerHost });
  const ledger = join(mkdtempSync(join(tmpdir(), 'tidemark-partitions-')), 'payments.jsonl');
  process.env['PAYMENTS_LEDGER'] = ledger;
  api = new PretendPayments(ledger);
  cluster = await Cluster.start({
    brokers: broker.brokers,
    label: 'partitions',
    gateways: 2,
    workers: 2,
    network,
    groupSessionTimeoutMs: SESSION_TIMEOUT_MS,
    handoffTimeoutMs: 2_000,
    gatewayLogTimeoutMs: GATEWAY_LOG_TIMEOUT_MS,
  });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await broker?.destroy();
  network?.destroy();
});

const urls = () => cluster.gateways.map((g) => cluster.urlOf(g));

/** The worker that journaled `step` first (not a replay), once one has. */
async function journaledBy(step: string): Promise<Member> {
  return vi.waitFor(
    () => {
      const found = cluster.workers.find((worker) =>
        worker.process.events.some((e) => {
          const line = e['step'] as { step: string; replayed: boolean } | undefined;
          return line?.step === step && !line.replayed;
        }),
      );
      if (found === undefined) throw new Error(`no worker journaled ${step} yet`);
      return found;
    },
    { timeout: 30_000, interval: 20 },
  );
}

/**
 * A session's `pay` call whose charge `worker` journaled: sessions are opened (on both gateways,
 * which mint them onto their own partitions) until one's call lands there. Its receipt comes a
 * session timeout and more after the charge. Its stream is read by nobody until `stop`.
 */
async function sessionPayOn(worker: Member): Promise<{ to: string; stop: () => void }> {
  const controller = new AbortController();
  for (let i = 0; i < 24; i++) {
    const client = new RawMcpClient(urls()[i % 2]!);
    await client.initialize();
    const to = `zombie-session-${i}@example.com`;
    const arguments_ = { to, amountCents: 100, holdMs: SESSION_TIMEOUT_MS + 3_000 };
    await client.post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'pay', arguments: arguments_ },
      },
      {},
      controller.signal,
    );
    const charged = (member: Member) =>
      member.process.events.some((e) => {
        const line = e['step'] as { step: string; session: string } | undefined;
        return line?.step === 'charge' && line.session === client.session;
      });
    const by = await vi.waitFor(
      () => {
        const found = cluster.workers.find(charged);
        if (found === undefined) throw new Error(`session ${i}: no charge journaled yet`);
        return found;
      },
      { timeout: 10_000, interval: 20 },
    );
    if (by === worker) return { to, stop: () => controller.abort() };
  }
  throw new Error(`no session's call of 24 landed on worker ${worker.name}`);
}

/** How many `assigned` lines a worker printed: a new one means its partitions changed. */
const assignments = (worker: Member) =>
  worker.process.events.filter((e) => Array.isArray(e['assigned'])).length;

describe('network partitions (network namespaces, iptables)', () => {
  it('a worker cut from the broker past its session timeout mid-task: its partitions move, the task completes on the other worker with the charge replayed, the zombie takes no step after its lease lapsed, and its late records change nothing', async () => {
    const [url, other] = urls() as [string, string];
    // The receipt comes after the zombie's lease lapsed (its session timeout after the cut):
    // cut off, it must not send it — the survivor does, without waiting for it.
    const created = await rpc(url, 'tools/call', {
      name: 'pay',
      arguments: {
        to: 'zombie@example.com',
        amountCents: 4200,
        holdMs: SESSION_TIMEOUT_MS + 3_000,
      },
    });
    const taskId = String(created.body.result?.['taskId']);
    const zombie = await journaledBy('charge');
    const survivor = cluster.workers.find((w) => w !== zombie)!;
    // A session's call on the zombie too: a revocation stops sessions later than tasks, so its
    // tool is still there when its next step comes.
    const sessionCall = await sessionPayOn(zombie);
    const before = assignments(zombie);
    network.cut(zombie.host!, brokerAddress);
    const cutAt = Date.now();
    let done: Record<string, unknown>;
    try {
      done = await pollTask([other, url], taskId, ['completed'], {
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      console.log(`a task whose worker was cut completed ${Date.now() - cutAt} ms after the cut`);
      // The survivor ran it, replaying the charge the zombie journaled.
      expect(
        survivor.process.events.some(
          (e) => (e['step'] as { replayed?: boolean } | undefined)?.replayed,
        ),
      ).toBe(true);
      // Cut off, the zombie stopped its partitions itself, its lease run out — before the group
      // could tell it so (its heartbeats go nowhere) ...
      await vi.waitFor(
        () => expect(zombie.process.stderr.join('')).toContain('no heartbeat answered'),
        { timeout: 15_000, interval: 100 },
      );
    } finally {
      network.heal(zombie.host!, brokerAddress);
    }
    // ... so the calls that come the moment the network heals, before the zombie hears it was
    // fenced, start on the survivor only: never once there and again on the zombie.
    const healed = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const task = await rpc(url, 'tools/call', {
          name: 'count',
          arguments: { to: 3, delayMs: 200 },
        });
        return String(task.body.result?.['taskId']);
      }),
    );
    await Promise.all(
      healed.map((id) =>
        pollTask(urls(), id, ['completed'], { timeoutMs: 30_000, intervalMs: 200 }),
      ),
    );
    for (const id of healed) expect(cluster.executionsOf(id).map((e) => e.attempt)).toEqual([1]);
    // The zombie comes back: it learns it lost its partitions, joins again, and what it still
    // writes is fenced.
    await vi.waitFor(
      async () => {
        expect(assignments(zombie)).toBeGreaterThan(before);
        expect((await cluster.workerMembers()).split(',')).toHaveLength(2);
      },
      { timeout: 60_000, interval: 200 },
    );
    await sleep(2_000);
    const chargeId = (done.result as { structuredContent?: { chargeId?: string } } | undefined)
      ?.structuredContent?.chargeId;
    expect(chargeId).toBeDefined();
    for (const at of [url, other]) {
      const again = await rpc(at, 'tasks/get', { taskId });
      expect(again.body.result).toMatchObject({ status: 'completed' });
      expect(again.body.result?.['result']).toEqual(done['result']);
    }
    const fresh = api.entries().filter((e) => e.fresh && e.to === 'zombie@example.com');
    expect(fresh.filter((e) => e.kind === 'charge')).toEqual([
      expect.objectContaining({ id: chargeId }),
    ]);
    expect(fresh.filter((e) => e.kind === 'receipt')).toHaveLength(1);
    // Not even a request the API deduplicated: the zombie's receipt steps never ran.
    const receipts = (to: string) =>
      api.entries().filter((e) => e.kind === 'receipt' && e.to === to);
    expect(receipts('zombie@example.com')).toHaveLength(1);
    await vi.waitFor(() => expect(receipts(sessionCall.to).length).toBeGreaterThan(0), {
      timeout: 30_000,
      interval: 200,
    });
    await sleep(1_000);
    expect(receipts(sessionCall.to)).toHaveLength(1);
    sessionCall.stop();
    await cluster.assigned();
  }, 120_000);

  it('a worker cut for less than its session timeout: the task goes on where it was, nothing runs again', async () => {
    const [url] = urls() as [string];
    const members = await cluster.workerMembers();
    const created = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 10, delayMs: 300 } },
      { meta: { progressToken: 'short-cut' } },
    );
    const taskId = String(created.body.result?.['taskId']);
    const runner = await vi.waitFor(
      () => {
        const found = cluster.runnerOf(taskId);
        if (found === undefined) throw new Error('not started yet');
        return found;
      },
      { timeout: 10_000, interval: 20 },
    );
    await sleep(600);
    network.cut(runner.host!, brokerAddress);
    await sleep(SESSION_TIMEOUT_MS / 3);
    network.heal(runner.host!, brokerAddress);
    await pollTask(urls(), taskId, ['completed'], { timeoutMs: 30_000, intervalMs: 200 });
    expect(cluster.executionsOf(taskId).map((e) => e.attempt)).toEqual([1]);
    expect(await cluster.workerMembers()).toBe(members);
    const streamed = await rpc(url, 'tasks/stream', { taskId });
    const progress = sseMessages(streamed.text)
      .map(
        (m) =>
          (
            m['params'] as
              { data?: { method?: string; params?: { progress?: number } } } | undefined
          )?.data,
      )
      .filter((data) => data?.method === 'notifications/progress')
      .map((data) => data?.params?.progress);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('a gateway cut from the broker answers its clients instead of hanging; the other gateway serves them', async () => {
    const [cutGateway, otherGateway] = cluster.gateways as [Member, Member];
    network.cut(cutGateway.host!, brokerAddress);
    try {
      const startedAt = Date.now();
      const answer = await fetchAnswer(cluster.urlOf(cutGateway));
      console.log(
        `a gateway cut from the broker answered ${answer.status} in ${Date.now() - startedAt} ms: ${answer.text.slice(0, 200)}`,
      );
      // Answered by its deadline, saying why and when to come back.
      expect(answer.status).toBe(503);
      expect(answer.text).toMatch(
        /The log is unavailable \(the log did not answer .+ within \d+ ms\)/,
      );
      expect(Date.now() - startedAt).toBeLessThan(GATEWAY_LOG_TIMEOUT_MS * 3);
      const served = await fetchAnswer(cluster.urlOf(otherGateway));
      expect(served.status).toBe(200);
      expect(served.text).toContain('"text":"1,2"');
    } finally {
      network.heal(cutGateway.host!, brokerAddress);
    }
    await vi.waitFor(
      async () =>
        expect((await fetchAnswer(cluster.urlOf(cutGateway))).text).toContain('"text":"1,2"'),
      { timeout: 60_000, interval: 1_000 },
    );
  });

  it('a gateway cut from its client mid-stream: the client resumes on the other gateway and gets exactly the rest', async () => {
    const [cutGateway, otherGateway] = cluster.gateways as [Member, Member];
    const client = new RawMcpClient(cluster.urlOf(cutGateway));
    await client.initialize();
    const controller = new AbortController();
    const response = await client.post(
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'count',
          arguments: { to: 12, delayMs: 250 },
          _meta: { progressToken: 'p7' },
        },
      },
      {},
      controller.signal,
    );
    const seen: number[] = [];
    let lastId: string | undefined;
    let stall: NodeJS.Timeout | undefined;
    const quiet = () => {
      clearTimeout(stall);
      // A cut shows as silence: the client gives up on a stream that says nothing for 1.5 s.
      stall = setTimeout(() => controller.abort(), 1_500);
    };
    try {
      await readSse(
        response,
        (event) => {
          if (event.id !== undefined) lastId = event.id;
          if (event.data === '') return;
          const message = JSON.parse(event.data) as {
            method?: string;
            params?: { progress?: number };
          };
          if (message.method === 'notifications/progress') seen.push(message.params!.progress!);
          if (seen.length === 3 && stall === undefined) {
            network.cut(cutGateway.host!, network.gatewayAddress);
            quiet();
          } else if (stall !== undefined) quiet();
        },
        controller,
      );
    } finally {
      clearTimeout(stall);
      network.heal(cutGateway.host!, network.gatewayAddress);
    }
    expect(lastId).toBeDefined();
    const elsewhere = new RawMcpClient(cluster.urlOf(otherGateway), client.session);
    let final: Record<string, unknown> | undefined;
    await readSse(await elsewhere.resume(lastId!), (event) => {
      if (event.data === '') return;
      const message = JSON.parse(event.data) as Record<string, unknown>;
      if (message['method'] === 'notifications/progress')
        seen.push((message['params'] as { progress: number }).progress);
      if (message['id'] === 7) {
        final = message;
        return false;
      }
    });
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(JSON.stringify(final?.['result'])).toContain('1,2,3,4,5,6,7,8,9,10,11,12');
  });
});

/** A stateless `count` to 2 on `url`: its HTTP status and body, or status 0 after 30 s. */
async function fetchAnswer(url: string): Promise<{ status: number; text: string }> {
  try {
    const answer = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2, delayMs: 10 } },
      { tasks: false, signal: AbortSignal.timeout(30_000) },
    );
    return { status: answer.status, text: answer.text };
  } catch (error) {
    return { status: 0, text: String(error) };
  }
}
