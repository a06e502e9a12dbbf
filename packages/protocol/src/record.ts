import { ErrorCodes, TidemarkError } from './errors.js';
import {
  formatGeneration,
  parseGeneration,
  type Generation,
  type GenerationCause,
} from './generation.js';
import { parseStreamId, type StreamId } from './ids.js';

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
  const map = new Map<string, string>();
  for (const [name, value] of headers) if (!map.has(name)) map.set(name, value);
  const version = map.get(StampHeaders.version);
  if (version === undefined) return malformed('no tm-v header');
  if (version !== STAMP_VERSION) {
    return {
      ok: false,
      error: new TidemarkError(ErrorCodes.unsupportedVersion, `record stamp version ${version}`),
    };
  }
  const stream = parseStreamId(map.get(StampHeaders.stream) ?? '');
  const generation = parseGeneration(map.get(StampHeaders.generation) ?? '');
  const seqText = map.get(StampHeaders.seq) ?? '';
  const kind = KINDS_BY_CODE.get(map.get(StampHeaders.kind) ?? '');
  const causeText = map.get(StampHeaders.cause);
  if (stream === undefined) return malformed('bad tm-stream');
  if (generation === undefined) return malformed('bad tm-gen');
  if (!/^(0|[1-9]\d{0,9})$/.test(seqText) || Number(seqText) > 0x7fff_ffff)
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
