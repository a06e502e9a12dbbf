import { randomUUID } from 'node:crypto';
import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import {
  ErrorCodes,
  positiveInteger,
  TidemarkError,
  type AppendRecord,
  type FetchResult,
  type LogRecord,
  type PartitionOffsets,
} from '@tidemark/protocol';
import { MAX_RECORDS_PER_FETCH, partitionKey, RecentRecords } from './recent-records.js';
import {
  INSERT_CHUNK,
  openDatabase,
  type CleanupPolicy,
  type Statements,
  type TopicRow,
} from './schema.js';

/** Columns of a `records` row: topic, partition, offset, key, value, headers, ts. */
const ROW_WIDTH = 7;

export interface EmbeddedTopicOptions {
  name: string;
  partitions: number;
  /** `delete` drops old records by retention; `compact` keeps the latest record per key. Default `delete`. */
  cleanup?: CleanupPolicy;
  /** Records older than this are deleted by `enforceRetention` (delete topics). */
  retentionMs?: number;
  /** At most this many records are kept per partition (delete topics). */
  retentionRecords?: number;
}

/**
 * The partitions in the SQLite file: topics, offsets and records. The log is the file's only
 * writer, so topic rows, partition offsets and the latest records are kept in memory as they are
 * written; SQLite is read for what came before.
 */
export class PartitionStore {
  readonly db: DatabaseSync;
  readonly clusterId: string;
  readonly statements: Statements;
  readonly recent = new RecentRecords();
  private readonly topicCache = new Map<string, TopicRow>();
  private readonly offsetCache = new Map<string, { logStart: bigint; next: bigint }>();
  /** The open transaction's records (ROW_WIDTH values each), written at its commit. */
  private readonly unwrittenRows: SQLInputValue[] = [];
  /** Partitions written to in the open transaction, whose `next_offset` row is still to write. */
  private readonly unwrittenNext = new Map<string, { topic: string; partition: number }>();

  constructor(path: string) {
    ({ db: this.db, clusterId: this.clusterId, statements: this.statements } = openDatabase(path));
  }

  /** Creates a topic, or checks that an existing one has the same partition count and cleanup policy. */
  createTopic(options: EmbeddedTopicOptions): void {
    positiveInteger(`topic ${options.name}: partitions`, options.partitions);
    const cleanup = options.cleanup ?? 'delete';
    const existing = this.statements.topic.get(options.name) as TopicRow | undefined;
    if (existing !== undefined) {
      if (existing.partitions === options.partitions && existing.cleanup === cleanup) return;
      throw new TidemarkError(
        ErrorCodes.topicMismatch,
        `topic ${options.name} exists with ${existing.partitions} partitions and cleanup ${existing.cleanup}; wanted ${options.partitions} and ${cleanup}`,
      );
    }
    this.transaction(() => {
      this.statements.insertTopic.run(
        options.name,
        randomUUID(),
        options.partitions,
        cleanup,
        options.retentionMs ?? null,
        options.retentionRecords ?? null,
      );
      for (let p = 0; p < options.partitions; p++)
        this.statements.insertPartition.run(options.name, p);
    });
  }

  allTopics(): TopicRow[] {
    return this.statements.allTopics.all() as unknown as TopicRow[];
  }

  topicRow(topic: string): TopicRow {
    const cached = this.topicCache.get(topic);
    if (cached !== undefined) return cached;
    const row = this.statements.topic.get(topic) as TopicRow | undefined;
    if (row === undefined)
      throw new TidemarkError(ErrorCodes.unknownTopic, `unknown topic ${topic}`);
    this.topicCache.set(topic, row);
    return row;
  }

  checkPartition(topic: string, partition: number): TopicRow {
    const row = this.topicRow(topic);
    if (!Number.isInteger(partition) || partition < 0 || partition >= row.partitions)
      throw new TidemarkError(
        ErrorCodes.unknownTopic,
        `topic ${row.name} has no partition ${partition}`,
      );
    return row;
  }

  offsetsOf(topic: string, partition: number): PartitionOffsets {
    const key = partitionKey(topic, partition);
    let cached = this.offsetCache.get(key);
    if (cached === undefined) {
      const row = this.statements.partition.get(topic, partition) as {
        log_start: bigint;
        next_offset: bigint;
      };
      cached = { logStart: row.log_start, next: row.next_offset };
      this.offsetCache.set(key, cached);
    }
    return { logStartOffset: cached.logStart, highWatermark: cached.next };
  }

  /**
   * Writes one record at the partition's next offset (inside a transaction, which writes its rows
   * at its commit); returns it as read.
   */
  insert(topic: string, record: AppendRecord, timestampMs: number): LogRecord {
    const offset = this.offsetsOf(topic, record.partition).highWatermark;
    // A copy of its own size: a small Buffer.from() is a slice of a shared 8 KiB pool slab, and
    // the records kept in memory would pin thousands of slabs.
    const value = record.value === null ? null : new Uint8Array(record.value);
    const headers = record.headers ?? [];
    this.unwrittenRows.push(
      topic,
      record.partition,
      offset,
      record.key,
      value,
      JSON.stringify(headers),
      timestampMs,
    );
    // The cache runs ahead inside the transaction (a rollback clears it); the partition's row is
    // written once, at commit, however many records the transaction wrote to it.
    const key = partitionKey(topic, record.partition);
    this.offsetCache.get(key)!.next = offset + 1n;
    this.unwrittenNext.set(key, { topic, partition: record.partition });
    return {
      partition: record.partition,
      offset,
      key: record.key,
      value,
      headers: headers.map(([name, v]) => [name, v] as [string, string]),
      timestampMs,
    };
  }

  /** Reads from `fromOffset`: from memory when it holds it, else from the file. */
  read(topic: string, partition: number, fromOffset: bigint, maxBytes: number): FetchResult {
    this.checkPartition(topic, partition);
    const { logStartOffset, highWatermark } = this.offsetsOf(topic, partition);
    if (fromOffset < logStartOffset || fromOffset > highWatermark)
      throw new TidemarkError(
        ErrorCodes.offsetOutOfRange,
        `offset ${fromOffset} is outside ${topic}/${partition} [${logStartOffset}, ${highWatermark}]`,
      );
    const recent = this.recent.read(topic, partition, fromOffset, maxBytes);
    if (recent !== undefined) {
      const nextOffset = (recent.at(-1)?.offset ?? fromOffset - 1n) + 1n;
      return { records: recent, logStartOffset, highWatermark, nextOffset };
    }
    const records = this.readFile(topic, partition, fromOffset, maxBytes);
    const last = records.at(-1);
    // Nothing left below the high watermark (compacted away): the next read starts at the tail.
    const nextOffset = last !== undefined ? last.offset + 1n : highWatermark;
    return {
      records,
      logStartOffset,
      highWatermark,
      nextOffset: nextOffset < fromOffset ? fromOffset : nextOffset,
    };
  }

  /** Deletes the records below `offset` and moves the log start there (never back). */
  moveLogStart(topic: string, partition: number, offset: bigint): void {
    this.statements.deleteBelow.run(topic, partition, offset);
    this.statements.setStart.run(offset, topic, partition, offset);
    const cached = this.offsetCache.get(partitionKey(topic, partition));
    if (cached !== undefined && cached.logStart < offset) cached.logStart = offset;
    this.recent.trimBelow(topic, partition, offset);
  }

  transaction<T>(fn: () => T): T {
    this.statements.begin.run();
    try {
      const result = fn();
      this.writeRows();
      for (const [key, { topic, partition }] of this.unwrittenNext)
        this.statements.bumpNext.run(this.offsetCache.get(key)!.next, topic, partition);
      this.unwrittenNext.clear();
      this.statements.commitTransaction.run();
      return result;
    } catch (error) {
      this.unwrittenRows.length = 0;
      this.unwrittenNext.clear();
      this.statements.rollback.run();
      // The caches ran ahead of what was rolled back: read them from the file again.
      this.offsetCache.clear();
      this.recent.clear();
      throw error;
    }
  }

  /** The open transaction's records: INSERT_CHUNK per statement, then the rest one by one. */
  private writeRows(): void {
    const rows = this.unwrittenRows;
    const chunk = INSERT_CHUNK * ROW_WIDTH;
    let at = 0;
    for (; rows.length - at >= chunk; at += chunk)
      this.statements.insertChunk.run(...rows.slice(at, at + chunk));
    for (; at < rows.length; at += ROW_WIDTH)
      this.statements.insert.run(...rows.slice(at, at + ROW_WIDTH));
    rows.length = 0;
  }

  private readFile(
    topic: string,
    partition: number,
    fromOffset: bigint,
    maxBytes: number,
  ): LogRecord[] {
    const rows = this.statements.read.all(
      topic,
      partition,
      fromOffset,
      MAX_RECORDS_PER_FETCH,
    ) as unknown as Array<{
      offset: bigint;
      key: string | null;
      value: Uint8Array | null;
      headers: string;
      ts: bigint;
    }>;
    const records: LogRecord[] = [];
    let bytes = 0;
    for (const row of rows) {
      const size = (row.value?.length ?? 0) + row.headers.length + (row.key?.length ?? 0);
      if (records.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      records.push({
        partition,
        offset: row.offset,
        key: row.key,
        value: row.value === null ? null : Buffer.from(row.value),
        headers: JSON.parse(row.headers) as Array<[string, string]>,
        timestampMs: Number(row.ts),
      });
    }
    return records;
  }
}
