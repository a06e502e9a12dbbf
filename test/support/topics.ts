import { Admin } from '@platformatic/kafka';
import { provisionTopics } from '@tidemark/kafka';
import type { TopicNames } from '@tidemark/protocol';
import { uniqueTopicName } from '@tidemark/kafka-fixtures';

/** The Tidemark topics under a unique prefix on the test broker, deleted when the test ends. */
export async function provisionTestTopics(
  ctx: { onTestFinished(fn: () => Promise<void>): void },
  brokers: readonly string[],
  options: { label: string; partitions: number },
): Promise<{ prefix: string; names: TopicNames }> {
  const prefix = `${uniqueTopicName(options.label)}.`;
  const { names } = await provisionTopics(
    { brokers },
    { prefix, partitions: options.partitions, replicationFactor: 1 },
  );
  ctx.onTestFinished(async () => {
    const admin = new Admin({ clientId: 'tidemark-test-cleanup', bootstrapBrokers: [...brokers] });
    try {
      await admin.deleteTopics({ topics: Object.values(names) });
    } finally {
      await admin.close();
    }
  });
  return { prefix, names };
}
