import type { LogRecord } from '@tidemark/protocol';

/** Records per partition kept in memory after their append (up to twice as many), so live tails never query SQLite. */
const RECENT_RECORDS = 1024;

/** Records read at most per fetch, as a Kafka fetch returns a batch. */
export const MAX_RECORDS_PER_FETCH = 1000;

/**
 * The latest records of each partition, as they were appended: a contiguous run (a reader served
 * from memory must see every offset), dropped where compaction left gaps.
 */
export class RecentRecords {
  private readonly runs = new Map<string, LogRecord[]>();

  remember(topic: string, record: LogRecord): void {
    const key = partitionKey(topic, record.partition);
    let run = this.runs.get(key);
    if (run === undefined) this.runs.set(key, (run = []));
    if (run.length > 0 && run.at(-1)!.offset + 1n !== record.offset) run.length = 0;
    run.push(record);
    // Trimmed when twice the size, not at every append past it: a shift of the whole run per
    // record was a twentieth of `tidemark dev` at full speed.
    if (run.length >= 2 * RECENT_RECORDS) run.splice(0, run.length - RECENT_RECORDS);
  }

  /** The records from `fromOffset`, when memory holds it; undefined: read the file. */
  read(
    topic: string,
    partition: number,
    fromOffset: bigint,
    maxBytes: number,
  ): LogRecord[] | undefined {
    const run = this.runs.get(partitionKey(topic, partition));
    const first = run?.[0]?.offset;
    if (run === undefined || first === undefined || fromOffset < first) return undefined;
    const records: LogRecord[] = [];
    let bytes = 0;
    for (let i = Number(fromOffset - first); i < run.length; i++) {
      const record = run[i]!;
      const size = (record.value?.length ?? 0) + (record.key?.length ?? 0) + 64;
      if (records.length >= MAX_RECORDS_PER_FETCH) break;
      if (records.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      records.push(record);
    }
    return records;
  }

  /** Retention moved the log start: records below it go. */
  trimBelow(topic: string, partition: number, offset: bigint): void {
    const run = this.runs.get(partitionKey(topic, partition));
    while (run !== undefined && run.length > 0 && run[0]!.offset < offset) run.shift();
  }

  /** Compaction left offset gaps the run does not have: the partition is read from the file again. */
  forget(topic: string, partition: number): void {
    this.runs.delete(partitionKey(topic, partition));
  }

  clear(): void {
    this.runs.clear();
  }
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
