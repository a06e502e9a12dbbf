import type { LogPort, LogRecord } from '@tidemark/protocol';

/**
 * The records of a partition's last `maxRecords` offsets that pass `keep`, read up to the high
 * watermark of now; `truncated` when older records exist before them (retention, or the bound).
 */
export async function scanTail(
  log: LogPort,
  topic: string,
  partition: number,
  maxRecords: number,
  keep: (record: LogRecord) => boolean,
): Promise<{ records: LogRecord[]; truncated: boolean }> {
  const { logStartOffset, highWatermark } = await log.offsets(topic, partition);
  const bound = highWatermark - BigInt(maxRecords);
  const from = bound > logStartOffset ? bound : logStartOffset;
  const records: LogRecord[] = [];
  let next = from;
  while (next < highWatermark) {
    const fetched = await log.fetch(topic, partition, next, { maxWaitMs: 0 });
    for (const record of fetched.records)
      if (record.offset < highWatermark && keep(record)) records.push(record);
    if (fetched.nextOffset <= next) break;
    next = fetched.nextOffset;
  }
  return { records, truncated: from > 0n };
}
