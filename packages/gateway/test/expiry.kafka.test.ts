import type { AddressInfo } from 'node:net';
import counting from '@tidemark/examples/counting';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { createKeyring } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { inject, onTestFinished } from 'vitest';
import { provisionTestTopics } from '@tidemark/fixtures/topics';
import { describeExpiry } from './expiry-suite.js';

const brokers = inject('kafkaBrokers');
const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(5) } });
const PARTITIONS = 2;

describeExpiry(
  'Kafka',
  async ({ sessionTtlMs, resultTtlMs }) => {
    const { prefix, names } = await provisionTestTopics({ onTestFinished }, brokers, {
      label: 'expiry',
      partitions: PARTITIONS,
    });
    const log = new KafkaLog({ brokers, groupSessionTimeoutMs: 6_000 });
    const worker = new Worker({
      log,
      topics: names,
      modules: [counting, paymentsModule(new PretendPayments(undefined))],
      group: `${prefix}workers`,
      pollMs: 100,
      commitIntervalMs: 100,
      sessionTtlMs,
      resultTtlMs,
      onProblem: () => {},
    });
    await worker.start();
    const deadline = Date.now() + 30_000;
    while (worker.assignedPartitions.length < PARTITIONS && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const gateway = await createGateway({
      log,
      topics: names,
      keyring,
      tailWaitMs: 100,
      sessionTtlMs,
      onError: () => {},
    });
    const server = await gateway.listen(0, '127.0.0.1');
    onTestFinished(async () => {
      // Idle kept-alive connections closed at once: no request is coming (a drain waits ~4 s).
      const drained = gateway.drain();
      server.closeIdleConnections();
      await drained;
      await worker.stop();
      await log.close();
    });
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
      log,
      topics: names,
      partitions: PARTITIONS,
    };
  },
  async ({ log, topics, partitions }) => {
    for (let p = 0; p < partitions; p++) {
      const { highWatermark } = await log.offsets(topics.events, p);
      await log.deleteRecordsBefore(topics.events, p, highWatermark);
    }
  },
);
