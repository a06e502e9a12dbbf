import { createMCPClient } from '@ai-sdk/mcp';
import { eventStreamKey, partitionForSession, type SessionId } from '@tidemark/protocol';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { Cluster, sleep, type Member } from '../e2e/cluster.js';
import { aiSdkWebhook, type AiSdkWebhook } from '../support/ai-sdk-webhook.js';
import { rpc } from '@tidemark/fixtures/task-client';

// The Events extension on a real broker with real processes: two gateways and two workers. A
// receiver that verifies every delivery itself (the AI SDK's) gets every one of 1,000 ticks at
// least once and in order while the worker delivering them and a gateway are killed -9, and the
// subscription outlives a restart of everything. Polls resume from a cursor on any gateway.

const brokers = inject('kafkaBrokers');
const EVERY_MS = 10;
const ticks = { name: 'ticks', arguments: { everyMs: EVERY_MS } };

async function cluster(): Promise<Cluster> {
  const started = await Cluster.start({
    brokers,
    label: 'events',
    partitions: 2,
    gateways: 2,
    workers: 2,
    events: true,
  });
  onTestFinished(() => started.stop());
  return started;
}

async function until(check: () => boolean, what: string, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The worker that owns a partition now (its last `assigned` line). */
function ownerOf(c: Cluster, partition: number): Member {
  const owner = c.workers.find((worker) =>
    (
      worker.process.events.findLast((e) => Array.isArray(e['assigned']))?.['assigned'] as
        number[] | undefined
    )?.includes(partition),
  );
  if (owner === undefined) throw new Error(`nobody owns partition ${partition}`);
  return owner;
}

const highest = (receiver: AiSdkWebhook) =>
  Math.max(0, ...receiver.events.map((event) => Number(event.data['n'])));

/**
 * What the receiver got, checked: every n from 1 to the highest at least once, and — each
 * occurrence counted where it first arrived — in order; a redelivery carries the same eventId.
 */
function expectEveryTickInOrder(receiver: AiSdkWebhook): void {
  const byId = new Map<string, number>();
  const firsts: number[] = [];
  for (const event of receiver.events) {
    const n = Number(event.data['n']);
    const known = byId.get(event.eventId);
    if (known !== undefined) {
      expect(known).toBe(n); // the same occurrence, delivered again
      continue;
    }
    byId.set(event.eventId, n);
    firsts.push(n);
  }
  expect(receiver.gaps).toEqual([]);
  expect(receiver.unverified).toBe(0); // every delivery verified by the standardwebhooks library too
  expect(firsts).toEqual(firsts.map((_, i) => i + 1));
}

describe('Events on Kafka: webhooks through kill -9, polls from any gateway', () => {
  it('delivers 1,000 ticks while the delivering worker and a gateway are killed -9, and after a full restart', async () => {
    const c = await cluster();
    const receiver = await aiSdkWebhook();
    const client = await createMCPClient({
      transport: { type: 'http', url: c.url },
      experimental_events: { store: receiver.store },
    });
    await client.experimental_events.subscribe({
      ...ticks,
      delivery: { mode: 'webhook', url: receiver.url, allowInsecureLocalhost: true },
    });
    await client.close();
    const partition = partitionForSession(eventStreamKey('ticks', ticks.arguments) as SessionId, 2);

    await until(() => highest(receiver) >= 200, '200 ticks');
    await c.kill(ownerOf(c, partition), 'SIGKILL'); // it ran the source and the deliveries
    await c.startWorker();
    await c.kill(c.gateways[0]!, 'SIGKILL');
    c.release(c.gateways[0]);
    await until(() => highest(receiver) >= 1_000, '1,000 ticks', 120_000);
    expectEveryTickInOrder(receiver);

    // Everything restarts; nobody subscribes again: the subscription is in the log.
    for (const member of [...c.workers, ...c.gateways]) await c.kill(member, 'SIGTERM');
    const before = highest(receiver);
    await c.startWorker();
    await c.startGateway();
    c.release(c.gateways[0]);
    await c.assigned();
    await until(() => highest(receiver) >= before + 100, 'ticks after the restart');
    expectEveryTickInOrder(receiver);
  });

  it('polls resume from a cursor on the other gateway, without a gap, after the first is killed', async () => {
    const c = await cluster();
    const urls = c.gateways.map((gateway) => `http://127.0.0.1:${gateway.port}/mcp`);
    const start = await rpc(urls[0]!, 'events/poll', ticks);
    let cursor = String(start.body.result!['cursor']);
    const seen: number[] = [];
    const pollOn = async (url: string, count: number) => {
      while (seen.length < count) {
        const { body } = await rpc(url, 'events/poll', { ...ticks, cursor });
        const page = body.result as {
          events: Array<{ data: { n: number } }>;
          cursor: string;
          truncated: boolean;
        };
        expect(page.truncated).toBe(false);
        seen.push(...page.events.map((event) => event.data.n));
        cursor = page.cursor;
        await sleep(50);
      }
    };
    await pollOn(urls[0]!, 50);
    await c.kill(c.gateways[0]!, 'SIGKILL');
    await pollOn(urls[1]!, 150);
    expect(seen).toEqual(seen.map((_, i) => i + 1));
    // A cursor forged from a real one is refused on any gateway.
    const forged = `${cursor.slice(0, -3)}${cursor.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    const refused = await rpc(urls[1]!, 'events/poll', { ...ticks, cursor: forged });
    expect(refused.body.error).toMatchObject({ code: -32602, message: /cursor refused/ });
  });
});
