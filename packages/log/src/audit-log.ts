import {
  auditKey,
  decodeAuditRecord,
  encodeAuditRecord,
  partitionForSession,
  type AuditRecord,
  type LogPort,
  type PartitionKey,
} from '@tidemark/protocol';
import { readRange } from './range-read.js';

// The audit trail in the log: the `audit` topic, one record per call end, keyed by the call and
// in its owner's partition. A call that ran again (its worker died after writing the record but
// before its answer landed) has two records under one key: a reader keeps the last.

export interface AuditLogOptions {
  readonly log: LogPort;
  readonly topic: string;
  readonly partitionCount: number;
}

export interface AuditQuery {
  /** Calls that ended at or after this time (ms since the epoch). */
  readonly sinceMs?: number | undefined;
  /** Calls that ended before this time. */
  readonly untilMs?: number | undefined;
  /** Only this subject's calls (what a subject may see of the trail). */
  readonly subject?: string | undefined;
  /** Read only this many of each partition's latest records (a page's view); default all. */
  readonly latest?: number | undefined;
}

export class AuditLog {
  constructor(private readonly options: AuditLogOptions) {}

  /** Appends a call's record; resolves once it is durable. */
  async append(record: AuditRecord): Promise<void> {
    const { log, topic, partitionCount } = this.options;
    await log.append(topic, [
      {
        // The owner's partition, as the call's own records: its records stay in order.
        partition: partitionForSession(record.owner as PartitionKey, partitionCount),
        key: auditKey(record.owner, record.stream),
        value: encodeAuditRecord(record),
      },
    ]);
  }

  /**
   * The calls that ended in the query's window, one record each (the last written for its key),
   * in the order they ended. Reads every partition as it stands now; what retention deleted is
   * skipped.
   */
  async read(query: AuditQuery = {}): Promise<AuditRecord[]> {
    const { log, topic, partitionCount } = this.options;
    const latest = new Map<string, AuditRecord>();
    for (let partition = 0; partition < partitionCount; partition++) {
      const { logStartOffset, highWatermark } = await log.offsets(topic, partition);
      const recent = query.latest === undefined ? 0n : highWatermark - BigInt(query.latest);
      const from = recent > logStartOffset ? recent : logStartOffset;
      const range = { from, until: highWatermark, evicted: 'skip' as const };
      for await (const logRecord of readRange(log, topic, partition, range)) {
        const record = decodeAuditRecord(logRecord.value);
        if (record !== undefined && logRecord.key !== null) latest.set(logRecord.key, record);
      }
    }
    const { sinceMs = 0, untilMs = Infinity, subject } = query;
    return [...latest.values()]
      .filter(
        (r) =>
          r.atMs >= sinceMs && r.atMs < untilMs && (subject === undefined || r.subject === subject),
      )
      .sort((a, b) => a.atMs - b.atMs);
  }
}
