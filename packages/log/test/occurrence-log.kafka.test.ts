import { KafkaLog } from '@tidemark/kafka';
import { createTestTopic } from '@tidemark/kafka-fixtures';
import { inject, onTestFinished } from 'vitest';
import { describeOccurrencePolling } from './occurrence-suite.js';

const brokers = inject('kafkaBrokers');

describeOccurrencePolling('Kafka (real broker)', async (partitions) => {
  const port = new KafkaLog({ brokers });
  onTestFinished(() => port.close());
  const topic = await createTestTopic(
    { onTestFinished },
    { brokers, label: 'occurrences', partitions },
  );
  return { port, topic };
});
