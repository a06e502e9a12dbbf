import {
  ErrorCodes,
  joinParts,
  invalidOption,
  TidemarkError,
  TOPIC_CLEANUP,
  TOPIC_ROLES,
  type AppendRecord,
  type FetchOptions,
  type FetchResult,
  type GroupMembership,
  type GroupPort,
  type JoinGroupOptions,
  type LogIdentity,
  type LogPort,
  type LogRecord,
  type PartitionOffsets,
  type TopicNames,
} from '@tidemark/protocol';
import { AppendWaiters } from './append-waiters.js';
import { EmbeddedGroups } from './embedded-group.js';
import { PartitionStore, type EmbeddedTopicOptions } from './partition-store.js';
import { partitionKey } from './recent-records.js';
import { Retention } from './retention.js';

export interface EmbeddedLogOptions {
  /** A SQLite file (created with its directory), or `':memory:'` for tests. */
  path: string;
  topics?: readonly EmbeddedTopicOptions[];
  /** Run `enforceRetention` on this interval; unset: only when called. */
  retentionCheckIntervalMs?: number;
  /**
   * How long a record of a compacted topic stays before `enforceRetention` may compact it away (and
   * how long a tombstone stays, so readers see it).
   * @default 60_000
   */
  compactionLagMs?: number;
  /** Clock, for tests of time-based retention. Defaults to `Date.now`. */
  now?: () => number;
}

/** The topics of a deployment on the embedded log, as `provisionTopics` creates them. */
export interface EmbeddedTopicLayout {
  partitions: number;
  /** Retention of `requests` and `events` (the resume window); unset: kept until deleted. */
  resumeWindowMs?: number;
  /** Retention of `occurrences` (how long events replay); unset: the resume window. */
  replayWindowMs?: number;
  /** Retention of `audit` (the audit trail); unset: kept until deleted. */
  auditRetentionMs?: number;
}

const DEFAULT_MAX_BYTES = 1 << 20;

interface PendingAppend {
  topic: string;
  records: readonly AppendRecord[];
  resolve: (offsets: bigint[]) => void;
  reject: (error: Error) => void;
}

/** The least time between two commits of appends under load (group commit), in ms. */
const COMMIT_INTERVAL_MS = 1;

/**
 * The log port in one process: the same semantics as Kafka (offsets that only grow, a log start
 * offset that retention moves, offset gaps left by compaction, out-of-range reads refused), durable
 * in a SQLite file so a restarted process forgets nothing. Single-process by definition: two
 * processes must not share one file.
 *
 * @example
 * const log = new EmbeddedLog({ path: './data/log.sqlite' });
 * const topics = topicNames();
 * log.provisionTopics(topics, { partitions: 4, resumeWindowMs: 3_600_000 });
 */
export class EmbeddedLog implements LogPort, GroupPort {
  readonly kind = 'embedded';
  private readonly store: PartitionStore;
  private readonly now: () => number;
  private readonly waiters = new AppendWaiters();
  private readonly groups: EmbeddedGroups;
  private readonly retention: Retention;
  private readonly retentionTimer: NodeJS.Timeout | undefined;
  private readonly pendingAppends: PendingAppend[] = [];
  private lastFlushAt = 0;
  private closed = false;

  constructor(options: EmbeddedLogOptions) {
    if (typeof options.path !== 'string' || options.path === '')
      throw invalidOption('path', 'a file path or ":memory:"', options.path);
    const compactionLagMs = options.compactionLagMs ?? 60_000;
    if (!Number.isInteger(compactionLagMs) || compactionLagMs < 0)
      throw invalidOption('compactionLagMs', 'a non-negative integer', compactionLagMs);
    this.now = options.now ?? Date.now;
    this.store = new PartitionStore(options.path);
    this.groups = new EmbeddedGroups(this.store, (fn) => this.guard(fn));
    this.retention = new Retention(this.store, compactionLagMs, this.now);
    for (const topic of options.topics ?? []) this.createTopic(topic);
    if (options.retentionCheckIntervalMs !== undefined) {
      this.retentionTimer = setInterval(
        () => this.enforceRetention(),
        options.retentionCheckIntervalMs,
      );
      this.retentionTimer.unref();
    }
  }

  /** Creates a topic, or checks that an existing one has the same partition count and cleanup policy. */
  createTopic(options: EmbeddedTopicOptions): void {
    this.store.createTopic(options);
  }

  /**
   * Creates the topics of a deployment with their cleanup policies (or checks them): the
   * embedded twin of `@tidemark/kafka`'s `provisionTopics`.
   */
  provisionTopics(names: TopicNames, layout: EmbeddedTopicLayout): void {
    for (const role of TOPIC_ROLES) {
      const cleanup = TOPIC_CLEANUP[role];
      const retentionMs =
        role === 'occurrences'
          ? (layout.replayWindowMs ?? layout.resumeWindowMs)
          : role === 'audit'
            ? layout.auditRetentionMs
            : layout.resumeWindowMs;
      this.createTopic({
        name: names[role],
        partitions: layout.partitions,
        cleanup,
        ...(cleanup === 'delete' && retentionMs !== undefined ? { retentionMs } : {}),
      });
    }
  }

  identity(topic: string): Promise<LogIdentity> {
    return this.guard(() => ({
      clusterId: this.store.clusterId,
      topicId: this.store.topicRow(topic).topic_id,
    }));
  }

  partitionCount(topic: string): Promise<number> {
    return this.guard(() => this.store.topicRow(topic).partitions);
  }

  append(topic: string, records: readonly AppendRecord[]): Promise<bigint[]> {
    try {
      if (this.closed) throw new TidemarkError(ErrorCodes.closed, 'the embedded log is closed');
      for (const record of records) this.store.checkPartition(topic, record.partition);
    } catch (error) {
      return Promise.reject(asError(error));
    }
    return new Promise((resolve, reject) => {
      this.pendingAppends.push({ topic, records, resolve, reject });
      if (this.pendingAppends.length === 1) this.scheduleFlush();
    });
  }

  async fetch(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options: FetchOptions = {},
  ): Promise<FetchResult> {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    const read = (from: bigint) =>
      this.guard(() => this.store.read(topic, partition, from, maxBytes));
    // A value written in parts is read whole (the parts before this answer are read back).
    const whole = (result: FetchResult) => joinParts(result, read);
    const first = await read(fromOffset);
    const maxWaitMs = options.maxWaitMs ?? 0;
    if (first.records.length > 0 || fromOffset < first.highWatermark || maxWaitMs <= 0)
      return whole(first);
    if (!this.closed) await this.waiters.wait(partitionKey(topic, partition), maxWaitMs);
    return whole(await read(fromOffset));
  }

  offsets(topic: string, partition: number): Promise<PartitionOffsets> {
    return this.guard(() => {
      this.store.checkPartition(topic, partition);
      return this.store.offsetsOf(topic, partition);
    });
  }

  deleteRecordsBefore(topic: string, partition: number, offset: bigint): Promise<bigint> {
    return this.guard(() => {
      this.store.checkPartition(topic, partition);
      const { highWatermark } = this.store.offsetsOf(topic, partition);
      if (offset > highWatermark)
        throw new TidemarkError(
          ErrorCodes.offsetOutOfRange,
          `deleteRecordsBefore ${offset} is past the high watermark ${highWatermark}`,
        );
      this.store.transaction(() => this.store.moveLogStart(topic, partition, offset));
      return this.store.offsetsOf(topic, partition).logStartOffset;
    });
  }

  /**
   * Keeps only the latest record of each key below the partition's last record (as Kafka's cleaner
   * does), leaving offset gaps; tombstones are removed too. Records younger than `lagMs` stay. The
   * log start offset does not move. Resolves with how many records were removed.
   */
  compact(topic: string, partition: number, lagMs = 0): Promise<number> {
    return this.guard(() => {
      const row = this.store.checkPartition(topic, partition);
      if (row.cleanup !== 'compact')
        throw new TidemarkError(ErrorCodes.topicMismatch, `topic ${topic} is not compacted`);
      return this.retention.compact(topic, partition, lagMs);
    });
  }

  /**
   * Group membership in one process: the first member of a group gets every partition; later
   * members of the same group get none until it leaves. Commits are durable in the file.
   */
  joinGroup(options: JoinGroupOptions): Promise<GroupMembership> {
    return this.guard(() => this.groups.join(options));
  }

  /**
   * Applies time and count retention to every `delete` topic and compaction (past the compaction
   * lag) to every compacted partition written since its last compaction, then returns the freed
   * pages to the file system.
   */
  enforceRetention(): void {
    if (!this.closed) this.retention.enforce();
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.flushAppends(); // what was appended before close is written
    this.closed = true;
    if (this.retentionTimer !== undefined) clearInterval(this.retentionTimer);
    this.waiters.wakeAll();
    this.store.db.close();
    return Promise.resolve();
  }

  /**
   * Group commit: an append to an idle log is committed in the next turn of the event loop; under
   * load commits are at least COMMIT_INTERVAL_MS apart, and everything appended meanwhile shares
   * one. A commit costs about the same for one record as for a hundred (the WAL's pages).
   */
  private scheduleFlush(): void {
    const wait = this.lastFlushAt + COMMIT_INTERVAL_MS - performance.now();
    if (wait <= 0) setImmediate(() => this.flushAppends());
    else setTimeout(() => this.flushAppends(), wait);
  }

  /** Writes everything appended since the last commit in one SQLite transaction (one WAL write). */
  private flushAppends(): void {
    this.lastFlushAt = performance.now();
    const batch = this.pendingAppends.splice(0);
    if (batch.length === 0) return;
    const timestampMs = this.now();
    const written: Array<{ topic: string; record: LogRecord }> = [];
    let results: bigint[][];
    try {
      if (this.closed) throw new TidemarkError(ErrorCodes.closed, 'the embedded log is closed');
      results = this.store.transaction(() =>
        batch.map(({ topic, records }) =>
          records.map((appended) => {
            const record = this.store.insert(topic, appended, timestampMs);
            written.push({ topic, record });
            return record.offset;
          }),
        ),
      );
    } catch (error) {
      for (const pending of batch) pending.reject(asError(error));
      return;
    }
    const touched = new Set<string>();
    for (const { topic, record } of written) {
      this.store.recent.remember(topic, record);
      touched.add(partitionKey(topic, record.partition));
    }
    for (const key of touched) this.waiters.wake(key);
    batch.forEach((pending, i) => pending.resolve(results[i]!));
  }

  /** Runs a synchronous operation as a promise: errors become rejections, a closed log says so. */
  private guard<T>(fn: () => T): Promise<T> {
    if (this.closed)
      return Promise.reject(new TidemarkError(ErrorCodes.closed, 'the embedded log is closed'));
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(asError(error));
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
