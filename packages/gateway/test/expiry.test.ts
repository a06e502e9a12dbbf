import counting from '@tidemark/examples/counting';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { describeExpiry } from './expiry-suite.js';

describeExpiry(
  'embedded',
  async ({ sessionTtlMs, resultTtlMs }) => {
    const stack = await embeddedStack({
      partitions: 2,
      modules: [counting, paymentsModule(new PretendPayments(undefined))],
      gateway: { sessionTtlMs },
      worker: { sessionTtlMs, resultTtlMs, commitIntervalMs: 100 },
    });
    onTestFinished(() => stack.stop());
    return { url: stack.gateways[0]!.url, log: stack.log, topics: stack.topics, partitions: 2 };
  },
  async ({ log, topics, partitions }) => {
    for (let p = 0; p < partitions; p++) {
      const { highWatermark } = await log.offsets(topics.events, p);
      await log.deleteRecordsBefore(topics.events, p, highWatermark);
    }
  },
);
