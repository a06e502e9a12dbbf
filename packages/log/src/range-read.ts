import { ErrorCodes, isTidemarkError, type LogPort, type LogRecord } from '@tidemark/protocol';

// The bounded read of one stream: the records of one partition between two offsets, read once
// without waiting (a tail is `PartitionTail`'s job), optionally one session's only. The worker
// reads a taken-over call's earlier generations with it, the gateway a task's current generation,
// the console a partition's latest records.

export interface RangeReadOptions {
  /** The first offset read. */
  readonly from: bigint;
  /** Records at or past this offset are not read (the high watermark of "now", usually). */
  readonly until: bigint;
  /** Only records with this key (a session's, a task's). */
  readonly key?: string;
  /**
   * When records from `from` on were deleted under the read (retention, `deleteRecords`): `throw`
   * the log's `offsetOutOfRange`, or `skip` to what is left (callers that can do with less).
   * @default 'throw'
   */
  readonly evicted?: 'throw' | 'skip';
}

/** The records of `[from, until)` of one partition, in log order, fetched one batch at a time. */
export async function* readRange(
  log: LogPort,
  topic: string,
  partition: number,
  options: RangeReadOptions,
): AsyncGenerator<LogRecord> {
  let offset = options.from;
  while (offset < options.until) {
    let fetched;
    try {
      fetched = await log.fetch(topic, partition, offset, { maxWaitMs: 0 });
    } catch (error) {
      if (options.evicted !== 'skip' || !isEvicted(error)) throw error;
      const { logStartOffset } = await log.offsets(topic, partition);
      if (logStartOffset <= offset) throw error;
      offset = logStartOffset;
      continue;
    }
    for (const record of fetched.records)
      if (
        record.offset < options.until &&
        (options.key === undefined || record.key === options.key)
      )
        yield record;
    if (fetched.nextOffset <= offset) return;
    offset = fetched.nextOffset;
  }
}

/** Whether a read failed because the records it asked for are gone. */
export function isEvicted(error: unknown): boolean {
  return isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange;
}
