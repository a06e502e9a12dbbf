import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  ErrorCodes,
  invalidOption,
  TidemarkError,
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
} from '@tidemark/protocol';

export type CleanupPolicy = 'delete' | 'compact';

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

export interface EmbeddedLogOptions {
  /** A SQLite file (created with its directory), or `':memory:'` for tests. */
  path: string;
  topics?: readonly EmbeddedTopicOptions[];
  /** Run `enforceRetention` on this interval; unset: only when called. */
  retentionCheckIntervalMs?: number;
  /**
   * How long a record of a compacted topic stays before `enforceRetention` may compact it away (and
   * how long a tombstone stays, so readers see it). Default 60 s.
   */
  compactionLagMs?: number;
  /** Clock, for tests of time-based retention. Defaults to `Date.now`. */
  now?: () => number;
}

interface TopicRow {
  name: string;
  topic_id: string;
  partitions: number;
  cleanup: CleanupPolicy;
  retention_ms: number | null;
  retention_records: number | null;
}

const DEFAULT_MAX_BYTES = 1 << 20;
/** Records per partition kept in memory after their append, so live tails never query SQLite. */
const RECENT_RECORDS = 1024;

/**
 * The log port in one process: the same semantics as Kafka (offsets that only grow, a log start
 * offset that retention moves, offset gaps left by compaction, out-of-range reads refused), durable
 * in a SQLite file so a restarted process forgets nothing. Single-process by definition: two
 * processes must not share one file.
 */
export class EmbeddedLog implements LogPort, GroupPort {
  readonly kind = 'embedded';
  private readonly db: DatabaseSync;
  private readonly clusterId: string;
  private readonly now: () => number;
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly groupMembers = new Map<
    string,
    Array<{ options: JoinGroupOptions; partitions: number[] }>
  >();
  private readonly retentionTimer: NodeJS.Timeout | undefined;
  private readonly compactionLagMs: number;
  /**
   * Per compacted partition, its last compaction: the high watermark then, when, and whether it
   * left nothing for later (a pass after the lag, with no write since, sees every record old enough).
   */
  private readonly compactedAt = new Map<string, { hwm: bigint; atMs: number; final: boolean }>();
  private closed = false;
  // This object is the only writer of its file, so topic rows, partition offsets and the latest
  // records are kept in memory as they are written; SQLite is read for what came before.
  private readonly topicCache = new Map<string, TopicRow>();
  private readonly offsetCache = new Map<string, { logStart: bigint; next: bigint }>();
  private readonly recent = new Map<string, LogRecord[]>();
  private readonly pendingAppends: Array<{
    topic: string;
    records: readonly AppendRecord[];
    resolve: (offsets: bigint[]) => void;
    reject: (error: Error) => void;
  }> = [];
  private readonly statements: {
    topic: StatementSync;
    partition: StatementSync;
    insert: StatementSync;
    bumpNext: StatementSync;
    read: StatementSync;
    setStart: StatementSync;
    deleteBelow: StatementSync;
    compact: StatementSync;
    begin: StatementSync;
    commit: StatementSync;
    rollback: StatementSync;
  };

  constructor(options: EmbeddedLogOptions) {
    if (typeof options.path !== 'string' || options.path === '')
      throw invalidOption('path', 'a file path or ":memory:"', options.path);
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
    this.now = options.now ?? Date.now;
    this.compactionLagMs = options.compactionLagMs ?? 60_000;
    if (!Number.isInteger(this.compactionLagMs) || this.compactionLagMs < 0)
      throw invalidOption('compactionLagMs', 'a non-negative integer', this.compactionLagMs);
    this.db = new DatabaseSync(options.path);
    // Pages freed by retention and compaction go back to the file system (incremental vacuum), so
    // the file is bounded by what is live; a file made before this is rewritten once.
    const autoVacuum = (this.db.prepare('PRAGMA auto_vacuum').get() as { auto_vacuum: number })
      .auto_vacuum;
    if (autoVacuum !== INCREMENTAL_VACUUM)
      this.db.exec(`PRAGMA auto_vacuum = ${INCREMENTAL_VACUUM}; VACUUM;`);
    this.db.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS topics (
        name TEXT PRIMARY KEY, topic_id TEXT NOT NULL, partitions INTEGER NOT NULL,
        cleanup TEXT NOT NULL, retention_ms INTEGER, retention_records INTEGER);
      CREATE TABLE IF NOT EXISTS partitions (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, log_start INTEGER NOT NULL, next_offset INTEGER NOT NULL,
        PRIMARY KEY (topic, partition));
      CREATE TABLE IF NOT EXISTS records (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL, key TEXT, value BLOB,
        headers TEXT NOT NULL, ts INTEGER NOT NULL, PRIMARY KEY (topic, partition, offset)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS group_offsets (
        grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
        PRIMARY KEY (grp, topic, partition));
    `);
    this.db
      .prepare('INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)')
      .run('cluster_id', randomUUID());
    this.clusterId = String(
      (
        this.db.prepare('SELECT value FROM meta WHERE key = ?').get('cluster_id') as {
          value: string;
        }
      ).value,
    );
    this.statements = {
      topic: this.db.prepare('SELECT * FROM topics WHERE name = ?'),
      partition: this.db.prepare(
        'SELECT log_start, next_offset FROM partitions WHERE topic = ? AND partition = ?',
      ),
      insert: this.db.prepare(
        'INSERT INTO records (topic, partition, offset, key, value, headers, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      bumpNext: this.db.prepare(
        'UPDATE partitions SET next_offset = ? WHERE topic = ? AND partition = ?',
      ),
      read: this.db.prepare(
        'SELECT offset, key, value, headers, ts FROM records WHERE topic = ? AND partition = ? AND offset >= ? ORDER BY offset LIMIT ?',
      ),
      setStart: this.db.prepare(
        'UPDATE partitions SET log_start = ? WHERE topic = ? AND partition = ? AND log_start < ?',
      ),
      deleteBelow: this.db.prepare(
        'DELETE FROM records WHERE topic = ? AND partition = ? AND offset < ?',
      ),
      compact: this.db.prepare(
        `DELETE FROM records WHERE topic = :topic AND partition = :partition AND offset < :below
           AND ts <= :before AND (value IS NULL OR offset NOT IN (
             SELECT MAX(offset) FROM records WHERE topic = :topic AND partition = :partition GROUP BY key))`,
      ),
      begin: this.db.prepare('BEGIN IMMEDIATE'),
      commit: this.db.prepare('COMMIT'),
      rollback: this.db.prepare('ROLLBACK'),
    };
    for (const statement of [this.statements.partition, this.statements.read])
      statement.setReadBigInts(true);
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
    if (!Number.isInteger(options.partitions) || options.partitions < 1)
      throw invalidOption(
        `topic ${options.name}: partitions`,
        'a positive integer',
        options.partitions,
      );
    const cleanup = options.cleanup ?? 'delete';
    const existing = this.statements.topic.get(options.name) as TopicRow | undefined;
    if (existing !== undefined) {
      if (existing.partitions !== options.partitions || existing.cleanup !== cleanup) {
        throw new TidemarkError(
          ErrorCodes.topicMismatch,
          `topic ${options.name} exists with ${existing.partitions} partitions and cleanup ${existing.cleanup}; wanted ${options.partitions} and ${cleanup}`,
        );
      }
      return;
    }
    this.transaction(() => {
      this.db
        .prepare(
          'INSERT INTO topics (name, topic_id, partitions, cleanup, retention_ms, retention_records) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(
          options.name,
          randomUUID(),
          options.partitions,
          cleanup,
          options.retentionMs ?? null,
          options.retentionRecords ?? null,
        );
      const insert = this.db.prepare(
        'INSERT INTO partitions (topic, partition, log_start, next_offset) VALUES (?, ?, 0, 0)',
      );
      for (let p = 0; p < options.partitions; p++) insert.run(options.name, p);
    });
  }

  identity(topic: string): Promise<LogIdentity> {
    return this.guard(() => ({
      clusterId: this.clusterId,
      topicId: this.topicRow(topic).topic_id,
    }));
  }

  partitionCount(topic: string): Promise<number> {
    return this.guard(() => this.topicRow(topic).partitions);
  }

  append(topic: string, records: readonly AppendRecord[]): Promise<bigint[]> {
    try {
      if (this.closed) throw new TidemarkError(ErrorCodes.closed, 'the embedded log is closed');
      const row = this.topicRow(topic);
      for (const record of records) this.checkPartition(row, record.partition);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return new Promise((resolve, reject) => {
      this.pendingAppends.push({ topic, records, resolve, reject });
      if (this.pendingAppends.length === 1) setImmediate(() => this.flushAppends());
    });
  }

  /**
   * Group commit: every append of one turn of the event loop goes into one SQLite transaction
   * (one WAL write), instead of one transaction each.
   */
  private flushAppends(): void {
    const batch = this.pendingAppends.splice(0);
    if (batch.length === 0) return;
    const ts = this.now();
    const written: Array<{ topic: string; record: LogRecord }> = [];
    let results: bigint[][];
    try {
      if (this.closed) throw new TidemarkError(ErrorCodes.closed, 'the embedded log is closed');
      results = this.transaction(() =>
        batch.map(({ topic, records }) =>
          records.map((record) => {
            const next = this.offsetsOf(topic, record.partition).highWatermark;
            // A copy of its own size: a small Buffer.from() is a slice of a shared 8 KiB pool
            // slab, and the records kept in `recent` would pin thousands of slabs.
            const value = record.value === null ? null : new Uint8Array(record.value);
            const headers = record.headers ?? [];
            this.statements.insert.run(
              topic,
              record.partition,
              next,
              record.key,
              value,
              JSON.stringify(headers),
              ts,
            );
            this.statements.bumpNext.run(next + 1n, topic, record.partition);
            // The cache runs ahead inside the transaction; a rollback clears it.
            this.offsetCache.get(partitionKey(topic, record.partition))!.next = next + 1n;
            written.push({
              topic,
              record: {
                partition: record.partition,
                offset: next,
                key: record.key,
                value,
                headers: headers.map(([name, v]) => [name, v] as [string, string]),
                timestampMs: ts,
              },
            });
            return next;
          }),
        ),
      );
    } catch (error) {
      for (const pending of batch)
        pending.reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    const touched = new Set<string>();
    for (const { topic, record } of written) {
      this.remember(topic, record);
      touched.add(partitionKey(topic, record.partition));
    }
    for (const key of touched) this.wakeKey(key);
    batch.forEach((pending, i) => pending.resolve(results[i]!));
  }

  async fetch(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options: FetchOptions = {},
  ): Promise<FetchResult> {
    const first = await this.guard(() => this.readNow(topic, partition, fromOffset, options));
    const maxWaitMs = options.maxWaitMs ?? 0;
    if (first.records.length > 0 || fromOffset < first.highWatermark || maxWaitMs <= 0)
      return first;
    await this.waitForAppend(topic, partition, maxWaitMs);
    return this.guard(() => this.readNow(topic, partition, fromOffset, options));
  }

  offsets(topic: string, partition: number): Promise<PartitionOffsets> {
    return this.guard(() => {
      this.checkPartition(this.topicRow(topic), partition);
      return this.offsetsOf(topic, partition);
    });
  }

  deleteRecordsBefore(topic: string, partition: number, offset: bigint): Promise<bigint> {
    return this.guard(() => {
      this.checkPartition(this.topicRow(topic), partition);
      const { highWatermark } = this.offsetsOf(topic, partition);
      if (offset > highWatermark) {
        throw new TidemarkError(
          ErrorCodes.offsetOutOfRange,
          `deleteRecordsBefore ${offset} is past the high watermark ${highWatermark}`,
        );
      }
      this.transaction(() => this.moveLogStart(topic, partition, offset));
      return this.offsetsOf(topic, partition).logStartOffset;
    });
  }

  /**
   * Keeps only the latest record of each key below the partition's last record (as Kafka's cleaner
   * does), leaving offset gaps; tombstones are removed too. Records younger than `lagMs` stay. The
   * log start offset does not move. Resolves with how many records were removed.
   */
  compact(topic: string, partition: number, lagMs = 0): Promise<number> {
    return this.guard(() => {
      const row = this.topicRow(topic);
      this.checkPartition(row, partition);
      if (row.cleanup !== 'compact')
        throw new TidemarkError(ErrorCodes.topicMismatch, `topic ${topic} is not compacted`);
      return this.compactNow(topic, partition, lagMs);
    });
  }

  private compactNow(topic: string, partition: number, lagMs: number): number {
    const { highWatermark } = this.offsetsOf(topic, partition);
    // One pass for the latest offset of every key (an uncorrelated subquery, computed once).
    const result = this.statements.compact.run({
      topic,
      partition,
      below: highWatermark - 1n,
      before: this.now() - lagMs,
    });
    const key = partitionKey(topic, partition);
    const last = this.compactedAt.get(key);
    const nowMs = this.now();
    this.compactedAt.set(key, {
      hwm: highWatermark,
      atMs: nowMs,
      final: last?.hwm === highWatermark && nowMs - last.atMs >= lagMs,
    });
    // Compaction leaves offset gaps the in-memory run does not have: read from SQLite again.
    if (result.changes > 0) this.recent.delete(partitionKey(topic, partition));
    return Number(result.changes);
  }

  /**
   * Group membership in one process: the first member of a group gets every partition; later
   * members of the same group get none until it leaves. Commits are durable in the file.
   */
  joinGroup(options: JoinGroupOptions): Promise<GroupMembership> {
    return this.guard(() => {
      const row = this.topicRow(options.topic);
      const key = `${options.group}\u0000${options.topic}`;
      const members = this.groupMembers.get(key) ?? [];
      this.groupMembers.set(key, members);
      const member = { options, partitions: [] as number[] };
      members.push(member);
      if (members.length === 1) {
        member.partitions = Array.from({ length: row.partitions }, (_, p) => p);
        const assigned = member.partitions;
        queueMicrotask(() => options.onAssigned(assigned));
      }
      const committed = this.db.prepare(
        'SELECT offset FROM group_offsets WHERE grp = ? AND topic = ? AND partition = ?',
      );
      committed.setReadBigInts(true);
      const commit = this.db.prepare(
        'INSERT INTO group_offsets (grp, topic, partition, offset) VALUES (?, ?, ?, ?) ON CONFLICT (grp, topic, partition) DO UPDATE SET offset = excluded.offset',
      );
      return {
        committed: (partition) =>
          this.guard(
            () =>
              (
                committed.get(options.group, options.topic, partition) as
                  { offset: bigint } | undefined
              )?.offset,
          ),
        commit: (partition, offset) =>
          this.guard(() => {
            commit.run(options.group, options.topic, partition, offset);
          }),
        leave: async () => {
          const index = members.indexOf(member);
          if (index < 0) return;
          members.splice(index, 1);
          if (member.partitions.length > 0) {
            await options.onRevoked(member.partitions);
            const next = members[0];
            if (next !== undefined) {
              next.partitions = member.partitions;
              next.options.onAssigned(member.partitions);
            }
          }
        },
      };
    });
  }

  /**
   * Applies time and count retention to every `delete` topic and compaction (past the compaction
   * lag) to every compacted partition written since its last compaction, then returns the freed
   * pages to the file system.
   */
  enforceRetention(): void {
    if (this.closed) return;
    const all = this.db.prepare('SELECT * FROM topics').all() as unknown as TopicRow[];
    const topics = all.filter((row) => row.cleanup === 'delete');
    const oldestKept = this.db.prepare(
      'SELECT MIN(offset) AS o FROM records WHERE topic = ? AND partition = ? AND ts >= ?',
    );
    oldestKept.setReadBigInts(true);
    this.transaction(() => {
      for (const row of topics) {
        for (let p = 0; p < row.partitions; p++) {
          const { highWatermark } = this.offsetsOf(row.name, p);
          let start = 0n;
          if (row.retention_records !== null) start = highWatermark - BigInt(row.retention_records);
          if (row.retention_ms !== null) {
            const kept = (
              oldestKept.get(row.name, p, this.now() - row.retention_ms) as { o: bigint | null }
            ).o;
            const byTime = kept ?? highWatermark;
            if (byTime > start) start = byTime;
          }
          if (start > 0n) this.moveLogStart(row.name, p, start);
        }
      }
      for (const row of all.filter((r) => r.cleanup === 'compact')) {
        for (let p = 0; p < row.partitions; p++) {
          const { highWatermark } = this.offsetsOf(row.name, p);
          const last = this.compactedAt.get(partitionKey(row.name, p));
          const nothingNew =
            last?.hwm === highWatermark &&
            (last.final || this.now() - last.atMs < this.compactionLagMs);
          if (nothingNew) continue;
          this.compactNow(row.name, p, this.compactionLagMs);
        }
      }
    });
    this.db.exec('PRAGMA incremental_vacuum');
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.flushAppends(); // what was appended before close is written
    this.closed = true;
    if (this.retentionTimer !== undefined) clearInterval(this.retentionTimer);
    for (const set of this.waiters.values()) for (const wake of set) wake();
    this.waiters.clear();
    this.db.close();
    return Promise.resolve();
  }

  private readNow(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options: FetchOptions,
  ): FetchResult {
    this.checkPartition(this.topicRow(topic), partition);
    const { logStartOffset, highWatermark } = this.offsetsOf(topic, partition);
    if (fromOffset < logStartOffset || fromOffset > highWatermark) {
      throw new TidemarkError(
        ErrorCodes.offsetOutOfRange,
        `offset ${fromOffset} is outside ${topic}/${partition} [${logStartOffset}, ${highWatermark}]`,
      );
    }
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    const recent = this.recent.get(partitionKey(topic, partition));
    const first = recent?.[0]?.offset;
    if (recent !== undefined && first !== undefined && fromOffset >= first) {
      const records: LogRecord[] = [];
      let bytes = 0;
      for (let i = Number(fromOffset - first); i < recent.length && records.length < 1000; i++) {
        const record = recent[i]!;
        const size = (record.value?.length ?? 0) + (record.key?.length ?? 0) + 64;
        if (records.length > 0 && bytes + size > maxBytes) break;
        bytes += size;
        records.push(record);
      }
      const nextOffset = records.at(-1)?.offset ?? fromOffset - 1n;
      return { records, logStartOffset, highWatermark, nextOffset: nextOffset + 1n };
    }
    const rows = this.statements.read.all(topic, partition, fromOffset, 1000) as unknown as Array<{
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

  private moveLogStart(topic: string, partition: number, offset: bigint): void {
    this.statements.deleteBelow.run(topic, partition, offset);
    this.statements.setStart.run(offset, topic, partition, offset);
    const key = partitionKey(topic, partition);
    const cached = this.offsetCache.get(key);
    if (cached !== undefined && cached.logStart < offset) cached.logStart = offset;
    const recent = this.recent.get(key);
    while (recent !== undefined && recent.length > 0 && recent[0]!.offset < offset) recent.shift();
  }

  private offsetsOf(topic: string, partition: number): PartitionOffsets {
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

  /** Keeps an appended record for live readers, the latest RECENT_RECORDS per partition. */
  private remember(topic: string, record: LogRecord): void {
    const key = partitionKey(topic, record.partition);
    let recent = this.recent.get(key);
    if (recent === undefined) this.recent.set(key, (recent = []));
    // Only a contiguous run is kept: a reader served from memory must see every offset.
    if (recent.length > 0 && recent.at(-1)!.offset + 1n !== record.offset) recent.length = 0;
    recent.push(record);
    if (recent.length > RECENT_RECORDS) recent.splice(0, recent.length - RECENT_RECORDS);
  }

  private topicRow(topic: string): TopicRow {
    const cached = this.topicCache.get(topic);
    if (cached !== undefined) return cached;
    const row = this.statements.topic.get(topic) as TopicRow | undefined;
    if (row === undefined)
      throw new TidemarkError(ErrorCodes.unknownTopic, `unknown topic ${topic}`);
    this.topicCache.set(topic, row);
    return row;
  }

  private checkPartition(row: TopicRow, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= row.partitions) {
      throw new TidemarkError(
        ErrorCodes.unknownTopic,
        `topic ${row.name} has no partition ${partition}`,
      );
    }
  }

  private waitForAppend(topic: string, partition: number, maxWaitMs: number): Promise<void> {
    const key = partitionKey(topic, partition);
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const set = this.waiters.get(key) ?? new Set();
      this.waiters.set(key, set);
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxWaitMs);
      set.add(wake);
    });
  }

  private wakeKey(key: string): void {
    const set = this.waiters.get(key);
    if (set !== undefined) for (const wake of [...set]) wake();
  }

  private transaction<T>(fn: () => T): T {
    this.statements.begin.run();
    try {
      const result = fn();
      this.statements.commit.run();
      return result;
    } catch (error) {
      this.statements.rollback.run();
      // The caches ran ahead of what was rolled back: read them from the file again.
      this.offsetCache.clear();
      this.recent.clear();
      throw error;
    }
  }

  /** Runs a synchronous operation as a promise: errors become rejections, a closed log says so. */
  private guard<T>(fn: () => T): Promise<T> {
    if (this.closed)
      return Promise.reject(new TidemarkError(ErrorCodes.closed, 'the embedded log is closed'));
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

/** `PRAGMA auto_vacuum` value of incremental vacuum. */
const INCREMENTAL_VACUUM = 2;

const partitionKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;
