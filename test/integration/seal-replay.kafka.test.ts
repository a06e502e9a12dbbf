import { KafkaLog } from '@tidemark/kafka';
import { describe, inject, it } from 'vitest';
import { replayedRecordsRunOnce } from '@tidemark/fixtures/seal-replay';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

// The replay of a sealed request record (security review M3) on the real broker, where `requests`
// is stamped with the broker's time (LogAppendTime): a copy appended again runs nothing.

describe('sealed request records on Kafka', () => {
  it('a sealed record appended again — on its partition, or on another — runs nothing again', async (ctx) => {
    const brokers = inject('kafkaBrokers');
    const { names } = await provisionTestTopics(ctx, brokers, {
      label: 'seal-replay',
      partitions: 2,
    });
    await replayedRecordsRunOnce(new KafkaLog({ brokers: [...brokers] }), names);
  });
});
