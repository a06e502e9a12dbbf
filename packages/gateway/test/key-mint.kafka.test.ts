import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import counting from '@tidemark/examples/counting';
import { createGateway, type Gateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import {
  createKeyring,
  partitionForSession,
  partitionTag,
  type SessionId,
} from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { describe, expect, inject, it, type TestContext } from 'vitest';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

// Gateways share the partitions of `events` out in a consumer group of their own, and mint the keys
// they create onto their share: a gateway's streams are then on partitions only it reads.

const brokers = inject('kafkaBrokers');
const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(4) } });
const PARTITIONS = 12;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function setup(ctx: TestContext) {
  const { prefix, names } = await provisionTestTopics(ctx, brokers, {
    label: 'keymint',
    partitions: PARTITIONS,
  });
  const logs: KafkaLog[] = [];
  const newLog = () => {
    const log = new KafkaLog({ brokers, groupSessionTimeoutMs: 6_000 });
    logs.push(log);
    return log;
  };
  const workerLog = newLog();
  const worker = new Worker({
    log: workerLog,
    topics: names,
    modules: [counting],
    group: `${prefix}workers`,
    pollMs: 100,
    onProblem: () => {},
  });
  await worker.start();
  const gateways: Array<{ gateway: Gateway; server: Server }> = [];
  const startGateway = async () => {
    const log = newLog();
    const gateway = await createGateway({
      log,
      topics: names,
      keyring,
      tailWaitMs: 100,
      group: { groups: log, name: `${prefix}gateways` },
      onError: () => {},
    });
    const server = await gateway.listen(0, '127.0.0.1');
    gateways.push({ gateway, server });
    return { gateway, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
  };
  ctx.onTestFinished(async () => {
    // Idle kept-alive connections closed at once: no request is coming (a drain waits ~4 s).
    for (const { gateway, server } of gateways) {
      const drained = gateway.drain();
      server.closeIdleConnections();
      await drained;
    }
    await worker.stop();
    for (const log of logs) await log.close();
  });
  return { startGateway };
}

/** Waits until the gateways' shares are disjoint and cover every partition. */
async function sharedOut(gateways: readonly Gateway[]): Promise<number[][]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const shares = gateways.map((g) => [...g.keyPartitions]);
    const all = shares.flat();
    if (
      all.length === PARTITIONS &&
      new Set(all).size === PARTITIONS &&
      shares.every((s) => s.length > 0)
    )
      return shares;
    if (Date.now() > deadline) throw new Error(`not shared out: ${JSON.stringify(shares)}`);
    await sleep(100);
  }
}

async function sessionsOn(url: string, count: number): Promise<SessionId[]> {
  const sessions: SessionId[] = [];
  for (let i = 0; i < count; i++) {
    const client = new RawMcpClient(url);
    await client.initialize();
    sessions.push(client.session as SessionId);
  }
  return sessions;
}

describe("the gateways' group: keys minted onto each gateway's share", () => {
  it('shares the partitions out, mints sessions onto the minting gateway’s share, and re-shares on a drain', async (ctx) => {
    const { startGateway } = await setup(ctx);
    const a = await startGateway();
    const b = await startGateway();
    const [shareA, shareB] = await sharedOut([a.gateway, b.gateway]);
    for (const [{ url }, share] of [
      [a, shareA!],
      [b, shareB!],
    ] as const)
      for (const session of await sessionsOn(url, 8)) {
        const partition = partitionForSession(session, PARTITIONS);
        expect(share).toContain(partition);
        expect(session.startsWith(partitionTag(partition, PARTITIONS)!)).toBe(true);
      }
    // A draining gateway leaves the group: the other one takes every partition for new keys.
    await b.gateway.drain();
    const [all] = await sharedOut([a.gateway]);
    expect(all).toHaveLength(PARTITIONS);
    const partitions = (await sessionsOn(a.url, 8)).map((s) => partitionForSession(s, PARTITIONS));
    expect(partitions.every((p) => p >= 0 && p < PARTITIONS)).toBe(true);
  }, 90_000);
});
