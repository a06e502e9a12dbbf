import { readRange } from '@tidemark/log';
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
  for await (const record of readRange(log, topic, partition, { from, until: highWatermark }))
    if (keep(record)) records.push(record);
  return { records, truncated: from > 0n };
}
