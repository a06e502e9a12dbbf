import { Admin, type ConnectionOptions } from '@platformatic/kafka';
import {
  DEFAULT_TOPIC_PREFIX,
  ErrorCodes,
  invalidOption,
  TidemarkError,
  TOPIC_CLEANUP,
  TOPIC_ROLES,
  topicNames,
  type TopicNames,
  type TopicRole,
} from '@tidemark/protocol';
import { kafkaApiIds, toTidemarkError } from './errors.js';

export interface TopicLayoutOptions {
  /** Prefix of the four topic names. Default `tidemark.`. */
  prefix?: string;
  /** Partitions of every topic (the same index serves a session in all four). Default 12. */
  partitions?: number;
  /** Default 3; 1 for a single-broker development cluster. */
  replicationFactor?: number;
  /** How long a dropped client can come back and resume: the retention of `events`. Default 1 h. */
  resumeWindowMs?: number;
  /** Retention of `requests`. Default 1 h. */
  requestsRetentionMs?: number;
  /** Segment roll of the delete topics, so retention acts at this granularity. Default 10 min. */
  segmentMs?: number;
  /** How long a compacted record is kept before the cleaner may replace it. Default 1 min. */
  minCompactionLagMs?: number;
  /**
   * Longest a replaced or tombstoned record of `streams` and `sessions` stays on disk: the workers
   * tombstone expired sessions and results (their TTLs), and this makes the cleaner remove them
   * within hours even when little else is written. Default 6 h.
   */
  maxCompactionLagMs?: number;
  /** How long a tombstone stays readable (`delete.retention.ms`). Default 1 h. */
  tombstoneRetentionMs?: number;
  /**
   * Largest record every topic takes (`max.message.bytes`), set explicitly: the broker's default
   * (1 MiB) is below the gateway's default body limit (4 MiB), and a request, its initialize in
   * `sessions` and a final result in `streams` can each be that large. Default 4 MiB + 64 KiB.
   */
  maxMessageBytes?: number;
  /** Extra or overriding configs per topic. */
  overrides?: Partial<Record<TopicRole, Record<string, string>>>;
}

export const TOPIC_LAYOUT_DEFAULTS = {
  prefix: DEFAULT_TOPIC_PREFIX,
  partitions: 12,
  replicationFactor: 3,
  resumeWindowMs: 60 * 60 * 1000,
  requestsRetentionMs: 60 * 60 * 1000,
  segmentMs: 10 * 60 * 1000,
  minCompactionLagMs: 60 * 1000,
  maxCompactionLagMs: 6 * 60 * 60 * 1000,
  tombstoneRetentionMs: 60 * 60 * 1000,
  maxMessageBytes: 4 * 1024 * 1024 + 64 * 1024,
} as const;

export interface TopicPlan {
  readonly role: TopicRole;
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** The four topics with their configs: what `provisionTopics` creates and `checkTopics` expects. */
export function planTopics(options: TopicLayoutOptions = {}): TopicPlan[] {
  const o = { ...TOPIC_LAYOUT_DEFAULTS, ...options };
  for (const key of ['partitions', 'replicationFactor', 'maxMessageBytes'] as const) {
    if (!Number.isInteger(o[key]) || o[key] < 1)
      throw invalidOption(key, 'a positive integer', o[key]);
  }
  for (const key of [
    'resumeWindowMs',
    'requestsRetentionMs',
    'segmentMs',
    'minCompactionLagMs',
    'maxCompactionLagMs',
    'tombstoneRetentionMs',
  ] as const) {
    if (!Number.isInteger(o[key]) || o[key] < 0)
      throw invalidOption(key, 'a non-negative integer of milliseconds', o[key]);
  }
  const names = topicNames(o.prefix);
  const compacted = {
    'min.compaction.lag.ms': String(o.minCompactionLagMs),
    'max.compaction.lag.ms': String(o.maxCompactionLagMs),
    'delete.retention.ms': String(o.tombstoneRetentionMs),
    'segment.ms': String(o.segmentMs),
  };
  const base: Record<TopicRole, Record<string, string>> = {
    requests: { 'retention.ms': String(o.requestsRetentionMs), 'segment.ms': String(o.segmentMs) },
    events: { 'retention.ms': String(o.resumeWindowMs), 'segment.ms': String(o.segmentMs) },
    streams: compacted,
    sessions: compacted,
  };
  return TOPIC_ROLES.map((role) => ({
    role,
    name: names[role],
    partitions: o.partitions,
    replicationFactor: o.replicationFactor,
    configs: {
      'cleanup.policy': TOPIC_CLEANUP[role],
      'max.message.bytes': String(o.maxMessageBytes),
      ...base[role],
      ...o.overrides?.[role],
    },
  }));
}

export interface AdminConnection {
  brokers: readonly string[];
  clientId?: string;
  connection?: Pick<
    ConnectionOptions,
    'tls' | 'sasl' | 'tlsServerName' | 'connectTimeout' | 'requestTimeout'
  >;
}

export interface ProvisionReport {
  readonly names: TopicNames;
  readonly created: readonly string[];
  readonly existing: readonly string[];
}

/**
 * Creates the four topics with explicit configs (never broker auto-creation). Idempotent: topics
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

/**
 * Verifies that the four topics exist and nothing in them contradicts docs/architecture.md: cleanup policies,
 * equal partition counts (a session maps to the same index in all four). Retention and other
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

async function checkWith(client: Admin, plan: readonly TopicPlan[]): Promise<void> {
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

function adminClient(admin: AdminConnection): Admin {
  if (admin.brokers === undefined || admin.brokers.length === 0)
    throw invalidOption('brokers', 'a non-empty list of host:port', admin.brokers);
  return new Admin({
    clientId: admin.clientId ?? 'tidemark-admin',
    bootstrapBrokers: [...admin.brokers],
    ...admin.connection,
  });
}

async function withAdmin<T>(admin: AdminConnection, fn: (client: Admin) => Promise<T>): Promise<T> {
  const client = adminClient(admin);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}
