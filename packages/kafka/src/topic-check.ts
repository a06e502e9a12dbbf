import type { Admin } from '@platformatic/kafka';
import {
  ErrorCodes,
  TidemarkError,
  TOPIC_CLEANUP,
  topicNames,
  type TopicNames,
  type TopicRole,
} from '@tidemark/protocol';
import { toTidemarkError } from './errors.js';
import { adminClient, withAdmin, type AdminConnection } from './admin-connection.js';
import {
  planTopics,
  TOPIC_LAYOUT_DEFAULTS,
  type TopicLayoutOptions,
  type TopicPlan,
} from './topic-plan.js';

// Checking a deployment's topics: that they exist with what Tidemark relies on, once (`topics
// check`, startup) or as a cached readiness probe.

/**
 * Verifies that the topics exist and nothing in them contradicts docs/architecture.md: cleanup policies,
 * equal partition counts (a session maps to the same index in all). Retention and other
 * tunables may differ from the defaults. Throws `TIDEMARK_TOPIC_MISMATCH` listing every problem.
 */
export async function checkTopics(
  admin: AdminConnection,
  options: TopicLayoutOptions = {},
): Promise<TopicNames> {
  const plan = planTopics(options);
  await withAdmin(admin, (client) => checkWith(client, plan));
  return topicNames(options.prefix ?? TOPIC_LAYOUT_DEFAULTS.prefix);
}

/** A readiness probe: are the topics there and right? One admin client, answers cached. */
export interface TopicsProbe {
  /** True when `checkTopics` would pass; the answer is reused for `cacheMs`. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * For `/readyz`, which a kubelet asks every few seconds on every pod: one admin connection kept
 * open (not one per probe), and one check per `cacheMs` however often it is asked.
 */
export function createTopicsProbe(
  admin: AdminConnection,
  options: TopicLayoutOptions = {},
  cacheMs = 1_000,
): TopicsProbe {
  const plan = planTopics(options);
  let client: Admin | undefined;
  let last: { atMs: number; answer: Promise<boolean> } | undefined;
  return {
    ready() {
      if (last !== undefined && Date.now() - last.atMs < cacheMs) return last.answer;
      client ??= adminClient(admin);
      const answer = checkWith(client, plan).then(
        () => true,
        () => false,
      );
      last = { atMs: Date.now(), answer };
      return answer;
    },
    async close() {
      await client?.close();
    },
  };
}

/** Checks the planned topics with an open admin client; throws listing every problem. */
export async function checkWith(client: Admin, plan: readonly TopicPlan[]): Promise<void> {
  let metadata;
  try {
    const existing = new Set(await client.listTopics());
    const present = plan.filter((t) => existing.has(t.name)).map((t) => t.name);
    metadata =
      present.length === 0
        ? undefined
        : await client.metadata({ topics: present, forceUpdate: true });
  } catch (error) {
    throw toTidemarkError(error, 'describe topics');
  }
  const counts = new Map<TopicRole, number>();
  const problems: string[] = [];
  for (const topic of plan) {
    const found = metadata?.topics.get(topic.name);
    if (found === undefined)
      problems.push(`${topic.name} does not exist (run \`tidemark topics create\`)`);
    else counts.set(topic.role, found.partitionsCount);
  }
  problems.push(...partitionProblems(plan, counts));
  const present = plan.filter((t) => counts.has(t.role));
  if (present.length > 0) problems.push(...(await cleanupProblems(client, present)));
  if (problems.length > 0) {
    throw new TidemarkError(
      ErrorCodes.topicMismatch,
      `Tidemark topics do not match what they must be:\n  - ${problems.join('\n  - ')}`,
    );
  }
}

/** Every topic must have as many partitions as `events`: a session maps to one index in all. */
function partitionProblems(plan: readonly TopicPlan[], counts: Map<TopicRole, number>): string[] {
  const eventsCount = counts.get('events');
  if (eventsCount === undefined) return [];
  return [...counts]
    .filter(([, count]) => count !== eventsCount)
    .map(
      ([role, count]) =>
        `${plan.find((t) => t.role === role)?.name} has ${count} partitions but events has ${eventsCount}: a session must map to the same index in every topic`,
    );
}

/** Cleanup policies that would lose data: compacted events, or heads and sessions that expire. */
async function cleanupProblems(client: Admin, present: readonly TopicPlan[]): Promise<string[]> {
  let described;
  try {
    described = await client.describeConfigs({
      resources: present.map((t) => ({
        resourceType: 2,
        resourceName: t.name,
        configurationKeys: ['cleanup.policy'],
      })),
    });
  } catch (error) {
    throw toTidemarkError(error, 'describe topic configs');
  }
  const problems: string[] = [];
  for (const topic of present) {
    const policy =
      described
        .find((d) => d.resourceName === topic.name)
        ?.configs.find((c) => c.name === 'cleanup.policy')?.value ?? 'delete';
    const wanted = TOPIC_CLEANUP[topic.role];
    const policies = policy.split(',').map((p) => p.trim());
    if (wanted === 'delete' && policies.includes('compact'))
      problems.push(
        `${topic.name} is compacted (cleanup.policy=${policy}); ${topic.role} must be cleanup.policy=delete, or compaction would silently drop events`,
      );
    if (wanted === 'compact' && !policies.includes('compact'))
      problems.push(
        `${topic.name} has cleanup.policy=${policy}; ${topic.role} must be compacted, or stream heads and sessions expire with retention`,
      );
  }
  return problems;
}

/** The replication factor cannot exceed the brokers there are: say so before creating anything. */
