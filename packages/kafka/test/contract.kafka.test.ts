import { createTestTopic, describeLogPortContract } from '@tidemark/kafka-fixtures';
import { inject, onTestFinished } from 'vitest';
import { KafkaLog } from '../src/index.js';

const brokers = inject('kafkaBrokers');
const cleanup = { onTestFinished };

/** Topic configs that let the broker compact within a second (segments roll on the next append). */
export const FAST_COMPACTION = {
  'cleanup.policy': 'compact',
  'segment.ms': '100',
  'min.cleanable.dirty.ratio': '0.01',
  'min.compaction.lag.ms': '0',
  'delete.retention.ms': '100',
};

describeLogPortContract('kafka (real broker)', () => {
  const log = new KafkaLog({ brokers });
  onTestFinished(() => log.close());
  return Promise.resolve({
    port: log,
    createTopic: ({ partitions, compacted }) =>
      createTestTopic(cleanup, {
        brokers,
        label: 'contract',
        partitions,
        ...(compacted === true ? { configs: FAST_COMPACTION } : {}),
      }),
    compactUntil: async (topic, partition, done) => {
      // The cleaner only cleans rolled segments; a segment rolls on the first append after segment.ms.
      const deadline = Date.now() + 45_000;
      while (!(await done())) {
        if (Date.now() > deadline) throw new Error(`the broker did not compact ${topic} in 45 s`);
        await new Promise((resolve) => setTimeout(resolve, 250));
        await log.append(topic, [{ partition, key: 'filler', value: Buffer.from('x') }]);
      }
    },
  });
});
