import {
  encodeEventCursor,
  logIdOf,
  verifyEventCursor,
  type AppendRecord,
  type EventCursorProblem,
  type EventOccurrence,
  type Keyring,
  type LogIdentity,
  type LogPort,
  partitionOfRecordKey,
} from '@tidemark/protocol';
import { readRange } from './range-read.js';

// Occurrences of the MCP Events extension in the log: one record each, keyed by its event stream
// (so a stream's occurrences are in one partition, in order), and a poll that reads a stream from
// a client's cursor — the authenticated position after the last occurrence it has. Retention is
// the only thing that skips occurrences, and then the answer says so (`truncated`).

/** Header of an occurrence record: its format version. */
const OCCURRENCE_HEADER = 'tm-occ';
const OCCURRENCE_VERSION = '1';

/**
 * An occurrence as it is recorded: what clients get, without the cursor (a position of its own),
 * and — for one a source read from an upstream — where the source resumes after it.
 */
export type StoredOccurrence = Omit<EventOccurrence, 'cursor'> & { readonly position?: string };

export interface OccurrenceLogOptions {
  readonly log: LogPort;
  readonly topic: string;
  readonly partitionCount: number;
  /** The topic's identity, carried in cursors (a cursor of another log is refused). */
  readonly logIdentity: LogIdentity;
  readonly keyring: Keyring;
}

export interface PollRequest {
  /** The event stream (`eventStreamKey(name, arguments)`). */
  readonly stream: string;
  /** The client's cursor; undefined starts from now (nothing returned, a cursor to poll with). */
  readonly cursor?: string | undefined;
  readonly maxEvents: number;
  readonly nowMs: number;
}

export type PollAnswer =
  | {
      readonly ok: true;
      readonly events: readonly EventOccurrence[];
      /** Where the next poll starts. */
      readonly cursor: string;
      /** Occurrences between the client's cursor and the first one returned are gone (retention). */
      readonly truncated: boolean;
    }
  | {
      readonly ok: false;
      readonly problem: EventCursorProblem | 'other-log' | 'beyond-tail';
      readonly detail: string;
    };

/** Appends and polls the occurrences of event streams on one topic. */
export class OccurrenceLog {
  constructor(private readonly options: OccurrenceLogOptions) {}

  /** The partition every occurrence of `stream` is in. */
  partitionOf(stream: string): number {
    return partitionOfRecordKey(stream, this.options.partitionCount);
  }

  /** Writes occurrences of one stream, in order; resolves with their offsets. */
  append(stream: string, occurrences: readonly StoredOccurrence[]): Promise<bigint[]> {
    const partition = this.partitionOf(stream);
    const records: AppendRecord[] = occurrences.map((occurrence) => ({
      partition,
      key: stream,
      value: Buffer.from(JSON.stringify(occurrence)),
      headers: [[OCCURRENCE_HEADER, OCCURRENCE_VERSION]],
    }));
    return this.options.log.append(this.options.topic, records);
  }

  /** A cursor at `offset` of `stream`'s partition. */
  cursorAt(stream: string, offset: bigint): string {
    const { logIdentity, keyring } = this.options;
    return encodeEventCursor(
      { logIdentity, partition: this.partitionOf(stream), offset },
      stream,
      keyring,
    );
  }

  /** The offset after the last occurrence of every stream of `stream`'s partition: "now". */
  async endOffset(stream: string): Promise<bigint> {
    const { log, topic } = this.options;
    return (await log.offsets(topic, this.partitionOf(stream))).highWatermark;
  }

  /**
   * Resolves when the stream's partition holds a record at or past `offset` (an occurrence of this
   * stream or of another), or after `maxWaitMs`: a long poll, so a follower hears of a new
   * occurrence as it is written instead of on its next round.
   */
  async waitPast(stream: string, offset: bigint, maxWaitMs: number): Promise<void> {
    const { log, topic } = this.options;
    await log
      .fetch(topic, this.partitionOf(stream), offset, { maxWaitMs, maxBytes: 1 })
      .catch(() => undefined); // evicted or past the end: the next read says so
  }

  /**
   * The occurrences of a stream after the client's cursor, at most `maxEvents`, each with the
   * cursor after it. A cursor below the log start reads from the log start with `truncated`; a
   * cursor that was not minted here for this stream, or names a position past the end, is refused.
   */
  async poll(request: PollRequest): Promise<PollAnswer> {
    const offset = await this.offsetOf(request);
    if (typeof offset !== 'bigint') return offset;
    const page = await this.readFrom(request.stream, offset, request.maxEvents);
    if (page === 'beyond-tail')
      return { ok: false, problem: 'beyond-tail', detail: 'the cursor is past the end of the log' };
    const events = page.events.map(({ offset: _offset, ...event }) => event);
    return { ok: true, events, cursor: page.cursor, truncated: page.truncated };
  }

  /** Where a cursor points, verified; undefined reads from now. */
  async offsetOf(
    request: Omit<PollRequest, 'maxEvents'>,
  ): Promise<bigint | Extract<PollAnswer, { ok: false }>> {
    const { logIdentity, keyring } = this.options;
    if (request.cursor === undefined) return this.endOffset(request.stream);
    const verified = verifyEventCursor(request.cursor, {
      stream: request.stream,
      keyring,
      nowMs: request.nowMs,
    });
    if (!verified.ok) return verified;
    const { claim } = verified;
    if (
      claim.logId !== logIdOf(logIdentity) ||
      claim.partition !== this.partitionOf(request.stream)
    )
      return { ok: false, problem: 'other-log', detail: 'the cursor is of another log or topic' };
    return claim.offset;
  }

  /**
   * At most `maxEvents` occurrences of a stream from `offset` on, each with its offset and the
   * cursor after it; `next` is where the next read starts. Below the log start: from the log
   * start, `truncated`. An offset past the end is refused.
   */
  async readFrom(
    stream: string,
    offset: bigint,
    maxEvents: number,
  ): Promise<OccurrencePage | 'beyond-tail'> {
    const { log, topic } = this.options;
    const partition = this.partitionOf(stream);
    const { logStartOffset, highWatermark } = await log.offsets(topic, partition);
    if (offset > highWatermark) return 'beyond-tail';
    const truncated = offset < logStartOffset;
    const from = truncated ? logStartOffset : offset;
    const events: Array<EventOccurrence & { offset: bigint }> = [];
    let next = from;
    let scanned = 0;
    const range = { from, until: highWatermark, evicted: 'skip' } as const;
    for await (const record of readRange(log, topic, partition, range)) {
      if (events.length >= maxEvents) break;
      // A quiet stream on a busy partition: one read scans a bounded stretch, and its cursor
      // stands where the scan stopped (the next poll goes on from there, at once).
      if (++scanned > MAX_SCANNED_RECORDS)
        return this.page(stream, events, next, truncated, logStartOffset, true);
      next = record.offset + 1n;
      if (record.key !== stream) continue;
      const occurrence = decodeOccurrence(record.value, record.headers);
      if (occurrence === undefined) continue;
      const { position: _position, ...delivered } = occurrence;
      events.push({ ...delivered, cursor: this.cursorAt(stream, next), offset: record.offset });
    }
    if (events.length < maxEvents) next = highWatermark;
    return this.page(stream, events, next, truncated, logStartOffset, false);
  }

  private page(
    stream: string,
    events: OccurrencePage['events'],
    next: bigint,
    truncated: boolean,
    logStartOffset: bigint,
    scanCut: boolean,
  ): OccurrencePage {
    return {
      events,
      next,
      cursor: this.cursorAt(stream, next),
      truncated,
      logStartOffset,
      scanCut,
    };
  }
}

/** A page of one stream's occurrences. */
export interface OccurrencePage {
  readonly events: Array<EventOccurrence & { readonly offset: bigint }>;
  /** Where the next read starts. */
  readonly next: bigint;
  /** The cursor at `next`. */
  readonly cursor: string;
  /** Occurrences between the offset asked for and the first one returned are gone. */
  readonly truncated: boolean;
  readonly logStartOffset: bigint;
  /** The read stopped at its bound on records scanned (other streams'): there may be more now. */
  readonly scanCut: boolean;
}

/** Records of a partition one read scans at most (its stream's and others'). */
const MAX_SCANNED_RECORDS = 10_000;

/**
 * The last source position recorded for a stream at or after `from` (an offset its source
 * head names), with its offset: where a source taken over resumes when occurrences were appended
 * after the head was last written (a kill between the two writes).
 */
export async function lastPositionAfter(
  log: LogPort,
  topic: string,
  partition: number,
  stream: string,
  from: bigint,
): Promise<{ position: string; offset: bigint } | undefined> {
  const { logStartOffset, highWatermark } = await log.offsets(topic, partition);
  const range = {
    from: from < logStartOffset ? logStartOffset : from,
    until: highWatermark,
    key: stream,
    evicted: 'skip',
  } as const;
  let last: { position: string; offset: bigint } | undefined;
  for await (const record of readRange(log, topic, partition, range)) {
    const position = decodeOccurrence(record.value, record.headers)?.position;
    if (position !== undefined) last = { position, offset: record.offset };
  }
  return last;
}

/** An occurrence record's value; undefined for a record of another format or a torn one. */
function decodeOccurrence(
  value: Uint8Array | null,
  headers: ReadonlyArray<readonly [string, string]>,
): StoredOccurrence | undefined {
  if (value === null) return undefined;
  if (!headers.some(([name, v]) => name === OCCURRENCE_HEADER && v === OCCURRENCE_VERSION))
    return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(value).toString('utf8')) as Partial<StoredOccurrence>;
    return typeof parsed.eventId === 'string' &&
      typeof parsed.name === 'string' &&
      typeof parsed.timestamp === 'string' &&
      typeof parsed.data === 'object' &&
      parsed.data !== null
      ? (parsed as StoredOccurrence)
      : undefined;
  } catch {
    return undefined;
  }
}
