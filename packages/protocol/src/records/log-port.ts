import { createHash } from 'node:crypto';
import type { LogIdentity } from '../ids/event-id.js';
import type { PartitionKey } from '../ids/ids.js';
import { DEFAULT_TOPIC_PREFIX } from '../wire/revisions.js';

/**
 * What Tidemark needs of a partitioned log, and all it needs: Kafka implements it
 * (`@tidemark/kafka`), and so does the embedded single-process log (`@tidemark/embedded-log`). Both
 * pass the same contract suite (`@tidemark/kafka-fixtures`).
 *
 * Offsets are bigints and may have gaps (compaction, transaction markers): readers never assume
 * `offset + 1` is the next record, they use `FetchResult.nextOffset`.
 */
export interface LogPort {
  /** Which implementation this is, for logs and metrics. */
  readonly kind: string;
  /** The identity carried in event ids: a different cluster or a recreated topic is another log. */
  identity(topic: string): Promise<LogIdentity>;
  partitionCount(topic: string): Promise<number>;
  /**
   * Appends records; resolves once they are durable, with their offsets in input order. Records for
   * the same partition keep their input order.
   */
  append(topic: string, records: readonly AppendRecord[]): Promise<bigint[]>;
  /**
   * Reads from `fromOffset` (inclusive). Waits up to `maxWaitMs` when there is nothing yet. Rejects
   * with `TIDEMARK_OFFSET_OUT_OF_RANGE` when `fromOffset` is below the log start or above the high
   * watermark: a reader must hear about an eviction, never be moved silently.
   */
  fetch(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options?: FetchOptions,
  ): Promise<FetchResult>;
  offsets(topic: string, partition: number): Promise<PartitionOffsets>;
  /** Deletes every record below `offset` (Kafka's deleteRecords); resolves with the new log start. */
  deleteRecordsBefore(topic: string, partition: number, offset: bigint): Promise<bigint>;
  close(): Promise<void>;
}

export interface AppendRecord {
  readonly partition: number;
  /** Null for records without key; compacted topics need a key. */
  readonly key: string | null;
  /** Null is a tombstone on a compacted topic. */
  readonly value: Uint8Array | null;
  readonly headers?: ReadonlyArray<readonly [string, string]>;
}

export interface LogRecord {
  readonly partition: number;
  readonly offset: bigint;
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly timestampMs: number;
}

export interface FetchOptions {
  /** Longest wait for a record when there is none yet; 0 answers at once. */
  readonly maxWaitMs?: number;
  /** Upper bound on the bytes of one answer (at least one record is always returned). */
  readonly maxBytes?: number;
}

export interface PartitionOffsets {
  /** The first offset still held. */
  readonly logStartOffset: bigint;
  /** The offset the next record will get. */
  readonly highWatermark: bigint;
}

export interface FetchResult extends PartitionOffsets {
  readonly records: readonly LogRecord[];
  /** Where the next fetch starts: past the last record returned, and past any gap it skipped. */
  readonly nextOffset: bigint;
}

/**
 * The partition of a session (or a routing key, a task, an event stream), the same index in every
 * topic. Stable across processes and releases: a change here moves every live session.
 */
export function partitionForSession(session: PartitionKey, partitionCount: number): number {
  return partitionOfRecordKey(session, partitionCount);
}

/**
 * The partition a record's key places it on, for a key read raw from the log (or an event
 * stream's key): what `partitionForSession` computes for an owner's key.
 */
export function partitionOfRecordKey(key: string, partitionCount: number): number {
  if (!Number.isInteger(partitionCount) || partitionCount < 1)
    throw new RangeError(`partitionCount: expected a positive integer, got ${partitionCount}`);
  return createHash('sha256').update(key).digest().readUInt32BE(0) % partitionCount;
}

/**
 * The topics of a deployment (docs/architecture.md, "Topics"): four for calls and sessions, two
 * for the Events extension (occurrences, and the subscriptions and sources that want them), and
 * the audit trail (one record per call, kept for its own retention).
 */
export type TopicRole =
  'requests' | 'events' | 'streams' | 'sessions' | 'occurrences' | 'subscriptions' | 'audit';

export const TOPIC_ROLES: readonly TopicRole[] = [
  'requests',
  'events',
  'streams',
  'sessions',
  'occurrences',
  'subscriptions',
  'audit',
];

/** `delete` for the three message topics and the audit trail; `compact` for the three tables. */
export const TOPIC_CLEANUP: Readonly<Record<TopicRole, 'delete' | 'compact'>> = {
  requests: 'delete',
  events: 'delete',
  streams: 'compact',
  sessions: 'compact',
  occurrences: 'delete',
  subscriptions: 'compact',
  audit: 'delete',
};

export type TopicNames = Readonly<Record<TopicRole, string>>;

/** Topic names under a prefix: `<prefix>requests`, … The prefix may be empty. */
export function topicNames(prefix = DEFAULT_TOPIC_PREFIX): TopicNames {
  if (!/^[A-Za-z0-9._-]{0,200}$/.test(prefix)) {
    throw new TypeError(
      `topic prefix: expected up to 200 of [A-Za-z0-9._-], got ${JSON.stringify(prefix)}`,
    );
  }
  return {
    requests: `${prefix}requests`,
    events: `${prefix}events`,
    streams: `${prefix}streams`,
    sessions: `${prefix}sessions`,
    occurrences: `${prefix}occurrences`,
    subscriptions: `${prefix}subscriptions`,
    audit: `${prefix}audit`,
  };
}

/**
 * Consumer-group membership over a topic: the log decides which partitions this member reads, and
 * keeps the offsets it commits. Reading itself goes through `LogPort.fetch`.
 */
export interface GroupPort {
  joinGroup(options: JoinGroupOptions): Promise<GroupMembership>;
}

export interface JoinGroupOptions {
  readonly topic: string;
  readonly group: string;
  /** Partitions this member now reads (in addition to those it had). */
  readonly onAssigned: (partitions: readonly number[]) => void;
  /** Partitions taken away: stop their work before resolving, another member continues them. */
  readonly onRevoked: (partitions: readonly number[]) => Promise<void> | void;
  /**
   * Partitions about to be taken away, called before the group hears that this member lets them
   * go (where the group protocol allows it): what their next owner must find when it starts (a
   * worker's handoff notices) is written here. `onRevoked` follows.
   */
  readonly onReleasing?: ((partitions: readonly number[]) => Promise<void>) | undefined;
  /**
   * Partitions this member no longer holds — taken away, or it was cut off from the group past its
   * session, or fenced — told at once, while `onRevoked` waits for the changes before it: nothing of
   * theirs may start from now on (the group may have given them to another member already).
   */
  readonly onLost?: ((partitions: readonly number[]) => void) | undefined;
}

export interface GroupMembership {
  /** The group protocol the membership runs on (Kafka: `consumer` or `classic`). */
  readonly protocol?: string;
  /** The committed offset of a partition (the next record to process), if any. */
  committed(partition: number): Promise<bigint | undefined>;
  commit(partition: number, offset: bigint): Promise<void>;
  leave(): Promise<void>;
}
