import {
  DEFAULT_TOPIC_PREFIX,
  invalidOption,
  positiveIntegers,
  TOPIC_CLEANUP,
  TOPIC_ROLES,
  topicNames,
  type TopicRole,
} from '@tidemark/protocol';

export interface TopicLayoutOptions {
  /**
   * Prefix of the topic names.
   * @default `tidemark.`
   */
  prefix?: string;
  /**
   * Partitions of every topic (the same index serves a session, or an event stream, in all).
   * @default 12
   */
  partitions?: number;
  /**
   * Copies of each partition: 1 for a single-broker development cluster.
   * @default 3
   */
  replicationFactor?: number;
  /**
   * How long a dropped client can come back and resume: the retention of `events`.
   * @default 1 h
   */
  resumeWindowMs?: number;
  /**
   * How long an event occurrence can be replayed from a cursor: the retention of `occurrences`. At
   * least the longest `replayWindowMs` of the event types served.
   * @default 1 h
   */
  replayWindowMs?: number;
  /**
   * Retention of `requests`.
   * @default 1 h
   */
  requestsRetentionMs?: number;
  /**
   * How long the audit trail keeps a call's record: the retention of `audit`. Export it to the SIEM
   * (`tidemark audit`, or the OpenTelemetry log records) within this.
   * @default 30 days
   */
  auditRetentionMs?: number;
  /**
   * Segment roll of the delete topics, so retention acts at this granularity.
   * @default 10 min
   */
  segmentMs?: number;
  /**
   * How long a compacted record is kept before the cleaner may replace it.
   * @default 1 min
   */
  minCompactionLagMs?: number;
  /**
   * Longest a replaced or tombstoned record of `streams` and `sessions` stays on disk: the workers
   * tombstone expired sessions and results (their TTLs), and this makes the cleaner remove them
   * within hours even when little else is written.
   * @default 6 h
   */
  maxCompactionLagMs?: number;
  /**
   * How long a tombstone stays readable (`delete.retention.ms`).
   * @default 1 h
   */
  tombstoneRetentionMs?: number;
  /**
   * Largest record every topic takes (`max.message.bytes`), set explicitly: the broker's default
   * (1 MiB) is below the gateway's default body limit (4 MiB), and a request, its initialize in
   * `sessions` and a final result in `streams` can each be that large.
   * @default 4 MiB + 64 KiB
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
  replayWindowMs: 60 * 60 * 1000,
  requestsRetentionMs: 60 * 60 * 1000,
  auditRetentionMs: 30 * 24 * 60 * 60 * 1000,
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

/** The topics with their configs: what `provisionTopics` creates and `checkTopics` expects. */
export function planTopics(options: TopicLayoutOptions = {}): TopicPlan[] {
  const o = { ...TOPIC_LAYOUT_DEFAULTS, ...options };
  positiveIntegers(o, ['partitions', 'replicationFactor', 'maxMessageBytes']);
  for (const key of [
    'resumeWindowMs',
    'replayWindowMs',
    'requestsRetentionMs',
    'auditRetentionMs',
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
    requests: {
      'retention.ms': String(o.requestsRetentionMs),
      'segment.ms': String(o.segmentMs),
      // The broker's time, not the writer's: a sealed record appended again later is told apart
      // (its seal carries when its gateway wrote it; a copy cannot keep the original's time).
      'message.timestamp.type': 'LogAppendTime',
    },
    events: { 'retention.ms': String(o.resumeWindowMs), 'segment.ms': String(o.segmentMs) },
    streams: compacted,
    sessions: compacted,
    occurrences: { 'retention.ms': String(o.replayWindowMs), 'segment.ms': String(o.segmentMs) },
    subscriptions: compacted,
    // Its segments roll daily: retention of days needs no finer grain, and fewer files.
    audit: {
      'retention.ms': String(o.auditRetentionMs),
      'segment.ms': String(Math.max(o.segmentMs, 24 * 60 * 60 * 1000)),
    },
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
