import { isUtf8 } from 'node:buffer';
import { ErrorCodes, TidemarkError } from '../errors.js';
import {
  formatGeneration,
  parseGeneration,
  type Generation,
  type GenerationCause,
} from '../ids/generation.js';
import { parseStreamId, type StreamId } from '../ids/ids.js';

/**
 * What a record in `events` is: the start of a generation (control, never sent to clients), one
 * server→client JSON-RPC message, or the terminal record (the stream's final message, if any).
 */
export type RecordKind = 'generation-start' | 'message' | 'terminal';

/** The stamps every record in `events` carries; the worker writes them, everyone else trusts only these. */
export interface RecordStamp {
  readonly stream: StreamId;
  readonly generation: Generation;
  /** 0 for a generation start; 1, 2, 3 … for messages and the terminal record, contiguous per generation. */
  readonly seq: number;
  readonly kind: RecordKind;
  /** Set on a generation start only. */
  readonly cause?: GenerationCause;
}

/** A record of one stream as read from a partition. */
export interface StampedRecord<Payload = unknown> {
  readonly offset: bigint;
  readonly stamp: RecordStamp;
  /** The JSON-RPC message; absent on generation starts and on a terminal record without message. */
  readonly payload?: Payload;
}

/** Version of the header codec; a reader refuses versions it does not know rather than guessing. */
export const STAMP_VERSION = '1';

export const StampHeaders = {
  version: 'tm-v',
  stream: 'tm-stream',
  generation: 'tm-gen',
  seq: 'tm-seq',
  kind: 'tm-kind',
  cause: 'tm-cause',
} as const;

const KIND_CODES: Record<RecordKind, string> = {
  'generation-start': 'g',
  message: 'm',
  terminal: 't',
};
const KINDS_BY_CODE = new Map(
  Object.entries(KIND_CODES).map(([kind, code]) => [code, kind as RecordKind]),
);
const CAUSES: ReadonlySet<string> = new Set<GenerationCause>(['first', 'retry', 'takeover']);

/** The stamp as record headers (name → value). One codec for Kafka and the embedded log. */
export function encodeStamp(stamp: RecordStamp): Array<[string, string]> {
  const headers: Array<[string, string]> = [
    [StampHeaders.version, STAMP_VERSION],
    [StampHeaders.stream, stamp.stream],
    [StampHeaders.generation, formatGeneration(stamp.generation)],
    [StampHeaders.seq, String(stamp.seq)],
    [StampHeaders.kind, KIND_CODES[stamp.kind]],
  ];
  if (stamp.cause !== undefined) headers.push([StampHeaders.cause, stamp.cause]);
  return headers;
}

export type StampDecoding =
  | { readonly ok: true; readonly stamp: RecordStamp }
  | { readonly ok: false; readonly error: TidemarkError };

/**
 * Reads the stamp from record headers. A record without `tm-v` is not Tidemark's (`ok: false`,
 * malformed); a newer version is refused with `TIDEMARK_UNSUPPORTED_VERSION`. Never throws.
 */
export function decodeStamp(headers: Iterable<readonly [string, string]>): StampDecoding {
  const { version, streamText, generationText, seqText, kindText, causeText } = stampTexts(headers);
  if (version === undefined) return malformed('no tm-v header');
  if (version !== STAMP_VERSION) {
    return {
      ok: false,
      error: new TidemarkError(ErrorCodes.unsupportedVersion, `record stamp version ${version}`),
    };
  }
  const stream = parseStreamId(streamText ?? '');
  const generation = parsedGeneration(generationText ?? '');
  const kind = KINDS_BY_CODE.get(kindText ?? '');
  if (stream === undefined) return malformed('bad tm-stream');
  if (generation === undefined) return malformed('bad tm-gen');
  if (seqText === undefined || !/^(0|[1-9]\d{0,9})$/.test(seqText) || Number(seqText) > 0x7fff_ffff)
    return malformed('bad tm-seq');
  if (kind === undefined) return malformed('bad tm-kind');
  const seq = Number(seqText);
  if ((kind === 'generation-start') !== (seq === 0))
    return malformed('seq 0 is exactly the generation start');
  if (causeText !== undefined && (!CAUSES.has(causeText) || kind !== 'generation-start'))
    return malformed('bad tm-cause');
  const stamp: RecordStamp =
    causeText === undefined
      ? { stream, generation, seq, kind }
      : { stream, generation, seq, kind, cause: causeText as GenerationCause };
  return { ok: true, stamp };
}

/** The last generation parsed: a stream's records repeat it, and a Generation is never mutated. */
let lastGeneration: { text: string; generation: Generation | undefined } = {
  text: '',
  generation: undefined,
};

function parsedGeneration(text: string): Generation | undefined {
  if (text !== lastGeneration.text) lastGeneration = { text, generation: parseGeneration(text) };
  return lastGeneration.generation;
}

interface StampTexts {
  version?: string;
  streamText?: string;
  generationText?: string;
  seqText?: string;
  kindText?: string;
  causeText?: string;
}

/**
 * The stamp's header values. Runs for every record every reader meets: one pass, no map; the
 * first of a repeated header counts.
 */
function stampTexts(headers: Iterable<readonly [string, string]>): StampTexts {
  const texts: StampTexts = {};
  for (const [name, value] of headers) {
    if (name === StampHeaders.version) texts.version ??= value;
    else if (name === StampHeaders.stream) texts.streamText ??= value;
    else if (name === StampHeaders.generation) texts.generationText ??= value;
    else if (name === StampHeaders.seq) texts.seqText ??= value;
    else if (name === StampHeaders.kind) texts.kindText ??= value;
    else if (name === StampHeaders.cause) texts.causeText ??= value;
  }
  return texts;
}

function malformed(detail: string): StampDecoding {
  return {
    ok: false,
    error: new TidemarkError(ErrorCodes.malformedRecord, `record stamp: ${detail}`),
  };
}

/**
 * One record of `events` as a stream reader needs it: the stamp and the parsed JSON message. A
 * record that is not a valid stamped record (not Tidemark's, a newer stamp, a value that is not
 * JSON) is `undefined`: readers skip it. Never throws.
 */
export function readStampedRecord(record: {
  readonly offset: bigint;
  readonly headers: Iterable<readonly [string, string]>;
  readonly value: Uint8Array | null;
}): StampedRecord | undefined {
  const decoded = decodeStamp(record.headers);
  if (!decoded.ok) return undefined;
  if (record.value === null) return { offset: record.offset, stamp: decoded.stamp };
  try {
    const payload: unknown = JSON.parse(Buffer.from(record.value).toString());
    return { offset: record.offset, stamp: decoded.stamp, payload };
  } catch {
    return undefined;
  }
}

/**
 * A message as the log holds it: the JSON bytes the worker wrote. Readers that only pass a message
 * on (the gateway writing SSE frames) carry its bytes from the log record to the socket, neither
 * parsed nor decoded; the text is decoded once, when something asks for it (a final message
 * answered under another id).
 */
export class JsonText {
  private decoded: string | undefined;

  /** A view of the record's value: the message's UTF-8, one JSON object on one line. */
  constructor(readonly bytes: Buffer) {}

  get text(): string {
    this.decoded ??= this.bytes.toString('utf8');
    return this.decoded;
  }

  /** Serialised by accident (inside another object), it is the message, not this wrapper. */
  toJSON(): unknown {
    return JSON.parse(this.text);
  }
}

/**
 * `readStampedRecord` for readers that pass messages on: the payload is its JSON bytes, unparsed.
 * They must be one JSON object on one line in valid UTF-8 (what the worker writes): anything else
 * — it could not be framed as one SSE event — makes the record unreadable, as invalid JSON does
 * there.
 */
export function readStampedFrame(record: {
  readonly offset: bigint;
  readonly headers: Iterable<readonly [string, string]>;
  readonly value: Uint8Array | null;
}): StampedRecord<JsonText> | undefined {
  const decoded = decodeStamp(record.headers);
  if (!decoded.ok) return undefined;
  if (record.value === null) return { offset: record.offset, stamp: decoded.stamp };
  const { value } = record;
  if (value[0] !== 0x7b || value[value.length - 1] !== 0x7d) return undefined;
  if (value.includes(0x0a) || value.includes(0x0d) || !isUtf8(value)) return undefined;
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return { offset: record.offset, stamp: decoded.stamp, payload: new JsonText(bytes) };
}
