import type { PartitionStore } from './partition-store.js';
import { partitionKey } from './recent-records.js';

/**
 * What Kafka's log cleaner and retention do, for the embedded log: time and count retention on
 * `delete` topics (the log start moves), compaction on `compact` topics (the latest record of each
 * key stays, leaving offset gaps; tombstones go after the lag), then freed pages back to the disk.
 */
export class Retention {
  /**
   * Per compacted partition, its last compaction: the high watermark then, when, and whether it
   * left nothing for later (a pass after the lag, with no write since, sees every record old enough).
   */
  private readonly compactedAt = new Map<string, { hwm: bigint; atMs: number; final: boolean }>();

  constructor(
    private readonly store: PartitionStore,
    private readonly compactionLagMs: number,
    private readonly now: () => number,
  ) {}

  /** One pass over every topic. */
  enforce(): void {
    const topics = this.store.allTopics();
    this.store.transaction(() => {
      for (const row of topics) {
        for (let p = 0; p < row.partitions; p++) {
          if (row.cleanup === 'delete')
            this.applyRetention(row.name, p, row.retention_ms, row.retention_records);
          else if (this.writtenSinceCompaction(row.name, p))
            this.compact(row.name, p, this.compactionLagMs);
        }
      }
    });
    this.store.db.exec('PRAGMA incremental_vacuum');
  }

  /**
   * Keeps only the latest record of each key below the partition's last record (as Kafka's cleaner
   * does); records younger than `lagMs` stay. Returns how many records were removed.
   */
  compact(topic: string, partition: number, lagMs: number): number {
    const { highWatermark } = this.store.offsetsOf(topic, partition);
    const nowMs = this.now();
    const result = this.store.statements.compact.run({
      topic,
      partition,
      below: highWatermark - 1n,
      before: nowMs - lagMs,
    });
    const key = partitionKey(topic, partition);
    const last = this.compactedAt.get(key);
    this.compactedAt.set(key, {
      hwm: highWatermark,
      atMs: nowMs,
      final: last?.hwm === highWatermark && nowMs - last.atMs >= lagMs,
    });
    if (result.changes > 0) this.store.recent.forget(topic, partition);
    return Number(result.changes);
  }

  private applyRetention(
    topic: string,
    partition: number,
    retentionMs: number | null,
    retentionRecords: number | null,
  ): void {
    const { highWatermark } = this.store.offsetsOf(topic, partition);
    let start = retentionRecords === null ? 0n : highWatermark - BigInt(retentionRecords);
    if (retentionMs !== null) {
      const oldest = this.store.statements.oldestKeptSince.get(
        topic,
        partition,
        this.now() - retentionMs,
      ) as { o: bigint | null };
      const byTime = oldest.o ?? highWatermark;
      if (byTime > start) start = byTime;
    }
    if (start > 0n) this.store.moveLogStart(topic, partition, start);
  }

  private writtenSinceCompaction(topic: string, partition: number): boolean {
    const { highWatermark } = this.store.offsetsOf(topic, partition);
    const last = this.compactedAt.get(partitionKey(topic, partition));
    const nothingNew =
      last?.hwm === highWatermark && (last.final || this.now() - last.atMs < this.compactionLagMs);
    return !nothingNew;
  }
}
