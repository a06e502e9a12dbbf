import { KafkaLog, provisionTopics } from '@tidemark/kafka';
import { uniqueTopicName } from '@tidemark/kafka-fixtures';
import { Admin } from '@platformatic/kafka';
import { inject, onTestFinished } from 'vitest';
import { describeLogComponents } from './log-suite.js';

const brokers = inject('kafkaBrokers');

describeLogComponents('Kafka (real broker)', () => {
  const port = new KafkaLog({ brokers });
  onTestFinished(() => port.close());
  return Promise.resolve({
    port,
    topics: async (partitions) => {
      const prefix = `${uniqueTopicName('log')}.`;
      const report = await provisionTopics(
        { brokers },
        { prefix, partitions, replicationFactor: 1 },
      );
      onTestFinished(async () => {
        const admin = new Admin({ clientId: 'tidemark-test-cleanup', bootstrapBrokers: brokers });
        try {
          await admin.deleteTopics({ topics: Object.values(report.names) });
        } finally {
          await admin.close();
        }
      });
      return report.names;
    },
  });
});
