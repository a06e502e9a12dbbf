import { randomBytes } from 'node:crypto';
import { ErrorCodes, TidemarkError } from '../errors.js';
import type { AppendRecord, FetchResult, LogRecord } from './log-port.js';

// A value larger than one record of the log takes (the topics' `max.message.bytes`) is written as
// parts: records that carry its first slices and no stamp (every stamped reader skips them, the
// previous release's too), then the record itself with the last slice and a header that says where
// its parts are. The log ports join them on fetch: readers above never see a part, only the whole
// record at its own offset.

/** On a part record: `<group> <index>/<count>` (index from 1; the count includes the completing record). */
export const PART_HEADER = 'tm-part';
/** On the completing record: `<group> <count> <offset of part 1>`. */
export const PARTS_HEADER = 'tm-parts';

/** A record to write in parts: its parts in order, then the record with where they landed. */
export interface PartedRecord {
  readonly parts: readonly AppendRecord[];
  /** The completing record, once part 1's offset is known. */
  complete(firstPartOffset: bigint): AppendRecord;
}

/**
 * Splits a record whose value is larger than `partBytes` into parts of `partBytes` each; undefined
 * for a record that fits. The headers stay on the completing record only.
 */
export function splitRecord(record: AppendRecord, partBytes: number): PartedRecord | undefined {
  const { value } = record;
  if (value === null || value.length <= partBytes) return undefined;
  const count = Math.ceil(value.length / partBytes);
  const group = randomBytes(8).toString('hex');
  const slice = (i: number) => value.subarray(i * partBytes, (i + 1) * partBytes);
  const parts = Array.from({ length: count - 1 }, (_, i) => ({
    partition: record.partition,
    key: record.key,
    value: slice(i),
    headers: [[PART_HEADER, `${group} ${i + 1}/${count}`]] as const,
  }));
  return {
    parts,
    complete: (first) => ({
      ...record,
      value: slice(count - 1),
      headers: [...(record.headers ?? []), [PARTS_HEADER, `${group} ${count} ${first}`]],
    }),
  };
}

/** A raw fetch of the partition the answer came from (no joining), for parts before the answer. */
export type RawFetch = (fromOffset: bigint) => Promise<FetchResult>;

/**
 * A fetch's answer as readers want it: part records left out, each completing record holding the
 * whole value. Parts before the answer's first offset are read back; parts the log no longer holds
 * make the read fail as evicted (`TIDEMARK_OFFSET_OUT_OF_RANGE`): the value cannot be told.
 */
export async function joinParts(result: FetchResult, fetchRaw: RawFetch): Promise<FetchResult> {
  if (!result.records.some(hasPartHeaders)) return result;
  const parts = new Map<string, Uint8Array>();
  const records: LogRecord[] = [];
  for (const record of result.records) {
    const part = headerOf(record, PART_HEADER);
    if (part !== undefined) {
      if (record.value !== null) parts.set(part.replace('/', ' '), record.value);
      continue;
    }
    const completing = headerOf(record, PARTS_HEADER);
    records.push(
      completing === undefined ? record : await joined(record, completing, parts, fetchRaw),
    );
  }
  return { ...result, records };
}

async function joined(
  record: LogRecord,
  header: string,
  parts: Map<string, Uint8Array>,
  fetchRaw: RawFetch,
): Promise<LogRecord> {
  const [group, countText, firstText] = header.split(' ');
  const count = Number(countText);
  if (!/^\d+$/.test(firstText ?? '') || !Number.isSafeInteger(count) || count < 2) return record;
  const wanted = (i: number) => `${group} ${i} ${count}`;
  const missing = () =>
    Array.from({ length: count - 1 }, (_, i) => wanted(i + 1)).some((k) => !parts.has(k));
  // Parts before the answer (a read that started between them and their record): read back.
  for (let offset = BigInt(firstText!); missing() && offset < record.offset;) {
    const earlier = await fetchRaw(offset);
    for (const part of earlier.records) {
      const name = headerOf(part, PART_HEADER);
      if (name !== undefined && part.value !== null) parts.set(name.replace('/', ' '), part.value);
    }
    if (earlier.nextOffset <= offset) break;
    offset = earlier.nextOffset;
  }
  const slices: Uint8Array[] = [];
  for (let i = 1; i < count; i++) {
    const slice = parts.get(wanted(i));
    if (slice === undefined)
      throw new TidemarkError(
        ErrorCodes.offsetOutOfRange,
        `part ${i} of ${count} of the record at ${record.offset} is gone from the log`,
      );
    slices.push(slice);
    parts.delete(wanted(i));
  }
  if (record.value !== null) slices.push(record.value);
  return { ...record, value: Buffer.concat(slices) };
}

function hasPartHeaders(record: LogRecord): boolean {
  for (const [name] of record.headers)
    if (name === PART_HEADER || name === PARTS_HEADER) return true;
  return false;
}

function headerOf(record: LogRecord, name: string): string | undefined {
  for (const [key, value] of record.headers) if (key === name) return value;
  return undefined;
}
