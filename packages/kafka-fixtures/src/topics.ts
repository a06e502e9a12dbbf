import { randomBytes } from 'node:crypto';
import { Admin } from '@platformatic/kafka';

/** The part of a test context this module needs: vitest's `TestContext` fits. */
export interface CleanupRegistrar {
  onTestFinished(fn: () => Promise<void> | void): void;
}

export interface TestTopicOptions {
  brokers: readonly string[];
  /** Readable part of the name; the rest is random so parallel tests never share a topic. */
  label?: string;
  partitions?: number;
  /** Topic configs, e.g. `{ 'cleanup.policy': 'compact', 'segment.ms': '100' }`. */
  configs?: Record<string, string>;
}

/** A unique topic name: `tm-test-<label>-<random>`. */
export function uniqueTopicName(label = 'topic'): string {
  const slug = label
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .slice(0, 40);
  return `tm-test-${slug}-${randomBytes(5).toString('hex')}`;
}

/**
 * Creates a unique topic for one test and deletes it when the test finishes, pass or fail.
 * Returns the topic name.
 */
export async function createTestTopic(
  ctx: CleanupRegistrar,
  options: TestTopicOptions,
): Promise<string> {
  const name = uniqueTopicName(options.label);
  const admin = new Admin({
    clientId: 'tidemark-test-admin',
    bootstrapBrokers: [...options.brokers],
  });
  try {
    await admin.createTopics({
      topics: [name],
      partitions: options.partitions ?? 1,
      replicas: 1,
      configs: Object.entries(options.configs ?? {}).map(([configName, value]) => ({
        name: configName,
        value,
      })),
    });
  } finally {
    await admin.close();
  }
  ctx.onTestFinished(async () => {
    const cleanup = new Admin({
      clientId: 'tidemark-test-admin',
      bootstrapBrokers: [...options.brokers],
    });
    try {
      await cleanup.deleteTopics({ topics: [name] });
    } finally {
      await cleanup.close();
    }
  });
  return name;
}
