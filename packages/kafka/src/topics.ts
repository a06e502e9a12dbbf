import type { Admin } from '@platformatic/kafka';
import { invalidOption, topicNames, type TopicNames } from '@tidemark/protocol';
import { withAdmin, type AdminConnection } from './admin-connection.js';
import { kafkaApiIds, toTidemarkError } from './errors.js';
import { checkWith } from './topic-check.js';
import {
  planTopics,
  TOPIC_LAYOUT_DEFAULTS,
  type TopicLayoutOptions,
  type TopicPlan,
} from './topic-plan.js';

export interface ProvisionReport {
  readonly names: TopicNames;
  readonly created: readonly string[];
  readonly existing: readonly string[];
}

/**
 * Creates the topics with explicit configs (never broker auto-creation). Idempotent: topics
 * that exist are checked instead, and a contradiction fails with `TIDEMARK_TOPIC_MISMATCH`.
 */
export async function provisionTopics(
  admin: AdminConnection,
  options: TopicLayoutOptions = {},
): Promise<ProvisionReport> {
  const plan = planTopics(options);
  return withAdmin(admin, async (client) => {
    const existing = new Set(
      await client.listTopics().catch((error: unknown) => {
        throw toTidemarkError(error, 'list topics');
      }),
    );
    if (plan.some((topic) => !existing.has(topic.name))) await fitsCluster(client, plan);
    const created: string[] = [];
    for (const topic of plan) {
      if (existing.has(topic.name)) continue;
      try {
        await client.createTopics({
          topics: [topic.name],
          partitions: topic.partitions,
          replicas: topic.replicationFactor,
          configs: Object.entries(topic.configs).map(([name, value]) => ({ name, value })),
        });
        created.push(topic.name);
      } catch (error) {
        // Another process created it between our list and create: check it like any existing one.
        if (!kafkaApiIds(error).includes('TOPIC_ALREADY_EXISTS'))
          throw toTidemarkError(error, `create topic ${topic.name}`);
      }
    }
    await waitUntilListed(client, created);
    await checkWith(client, plan);
    return {
      names: topicNames(options.prefix ?? TOPIC_LAYOUT_DEFAULTS.prefix),
      created,
      existing: plan.map((t) => t.name).filter((n) => !created.includes(n)),
    };
  });
}

async function fitsCluster(client: Admin, plan: readonly TopicPlan[]): Promise<void> {
  let brokers;
  try {
    brokers = (await client.metadata({ topics: [] })).brokers.size;
  } catch (error) {
    throw toTidemarkError(error, 'describe cluster');
  }
  const wanted = Math.max(...plan.map((topic) => topic.replicationFactor));
  if (wanted > brokers) {
    throw Object.assign(
      invalidOption(
        'replicationFactor',
        `at most the ${brokers} available broker${brokers === 1 ? '' : 's'}`,
        wanted,
      ),
      { option: 'replicationFactor', limit: brokers },
    );
  }
}

/** A created topic reaches every broker's metadata a moment later; wait for it (at most 15 s). */
async function waitUntilListed(client: Admin, names: readonly string[]): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const listed = new Set(await client.listTopics());
    if (names.every((name) => listed.has(name)) || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
