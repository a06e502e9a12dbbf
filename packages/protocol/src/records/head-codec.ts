import { formatGeneration, parseGeneration, type GenerationCause } from '../ids/generation.js';
import { parseStreamId, type PartitionKey, type StreamId } from '../ids/ids.js';
import type { StreamHead } from './stream-head.js';

/** Version of the stored head format in the `streams` topic. */
export const HEAD_FORMAT_VERSION = 1;

/**
 * Header of a stored head: `terminal` or `open`, so a sweep knows which heads hold a finished
 * result without decoding each.
 */
export const HEAD_STATE_HEADER = 'tm-head';

/** The key of a stream's head in the compacted `streams` topic. */
export function streamHeadKey(session: PartitionKey, stream: StreamId): string {
  return `${session}/${stream}`;
}

/**
 * The key of one journaled step of a call (`currentExecution().step`), beside its stream's head in
 * `streams`. Never a head's key: a stream id never starts with `~`. The parts are URI-encoded, so a
 * stream or step name holding `/` cannot be read as another.
 */
export function stepKey(session: PartitionKey, stream: StreamId, step: string): string {
  return `${session}/${STEP_KEY_MARK}${encodeURIComponent(stream)}/${encodeURIComponent(step)}`;
}

/** The head key of the call a step key belongs to; undefined for a key that is not a step's. */
export function headKeyOfStep(key: string): string | undefined {
  const session = sessionOfHeadKey(key);
  const rest = key.slice(session.length + 1);
  if (!rest.startsWith(STEP_KEY_MARK)) return undefined;
  const [stream, step] = rest.slice(STEP_KEY_MARK.length).split('/');
  if (stream === undefined || step === undefined) return undefined;
  return `${session}/${decodeURIComponent(stream)}`;
}

/** What a step key names: the call's owner key, its journal stream and the step; else undefined. */
export function parseStepKey(
  key: string,
): { session: PartitionKey; stream: StreamId; step: string } | undefined {
  const session = sessionOfHeadKey(key);
  const rest = key.slice(session.length + 1);
  if (!rest.startsWith(STEP_KEY_MARK)) return undefined;
  const [stream, step, extra] = rest.slice(STEP_KEY_MARK.length).split('/');
  if (stream === undefined || step === undefined || extra !== undefined) return undefined;
  try {
    return {
      session,
      stream: decodeURIComponent(stream) as StreamId,
      step: decodeURIComponent(step),
    };
  } catch {
    return undefined;
  }
}

/** The prefix of the step keys of one call (for listing its journal). */
export function stepKeyPrefix(session: PartitionKey, stream: StreamId): string {
  return `${session}/${STEP_KEY_MARK}${encodeURIComponent(stream)}/`;
}

const STEP_KEY_MARK = '~step/';

/** The session a head key belongs to (the part before the first `/`). */
export function sessionOfHeadKey(key: string): PartitionKey {
  const slash = key.indexOf('/');
  // A head key begins with the key of its owner (`streamHeadKey`).
  return (slash < 0 ? key : key.slice(0, slash)) as PartitionKey;
}

interface StoredHead {
  v: number;
  stream: string;
  generation: string;
  cause: GenerationCause;
  startOffset: string;
  lastSeq: number;
  lastOffset: string;
  contiguousFromSeq: number;
  contiguousFromOffset: string;
  terminal: { seq: number; offset: string; payload?: unknown; inLog?: true } | null;
  position: string;
  progressBase?: number;
  snapshot?: unknown;
  firstOffset?: string;
  seqBase?: number;
}

/** JSON of a head for the `streams` topic; the final payload must be JSON-serialisable. */
export function encodeStreamHead(head: StreamHead): string {
  const stored: StoredHead = {
    v: HEAD_FORMAT_VERSION,
    stream: head.stream,
    generation: formatGeneration(head.generation),
    cause: head.cause,
    startOffset: String(head.startOffset),
    lastSeq: head.lastSeq,
    lastOffset: String(head.lastOffset),
    contiguousFromSeq: head.contiguousFromSeq,
    contiguousFromOffset: String(head.contiguousFromOffset),
    terminal:
      head.terminal === undefined
        ? null
        : {
            seq: head.terminal.seq,
            offset: String(head.terminal.offset),
            ...(head.terminal.payload === undefined ? {} : { payload: head.terminal.payload }),
            ...(head.terminal.inLog ? { inLog: true as const } : {}),
          },
    position: String(head.position),
    ...(head.progressBase ? { progressBase: head.progressBase } : {}),
    ...(head.snapshot === undefined ? {} : { snapshot: head.snapshot }),
    ...(head.firstOffset === undefined ? {} : { firstOffset: String(head.firstOffset) }),
    ...(head.seqBase ? { seqBase: head.seqBase } : {}),
  };
  return JSON.stringify(stored);
}

/** Reads a stored head; undefined for anything that is not a head of a known version. Never throws. */
export function decodeStreamHead(text: string): StreamHead | undefined {
  let stored: StoredHead;
  try {
    stored = JSON.parse(text) as StoredHead;
  } catch {
    return undefined;
  }
  if (typeof stored !== 'object' || stored === null || stored.v !== HEAD_FORMAT_VERSION)
    return undefined;
  const stream = parseStreamId(String(stored.stream));
  const generation = parseGeneration(String(stored.generation));
  const big = (value: unknown) =>
    typeof value === 'string' && /^\d+$/.test(value) ? BigInt(value) : undefined;
  const startOffset = big(stored.startOffset);
  const lastOffset = big(stored.lastOffset);
  const contiguousFromOffset = big(stored.contiguousFromOffset);
  const position = big(stored.position);
  const terminalOffset = stored.terminal === null ? null : big(stored.terminal?.offset);
  if (
    stream === undefined ||
    generation === undefined ||
    startOffset === undefined ||
    lastOffset === undefined ||
    contiguousFromOffset === undefined ||
    position === undefined ||
    terminalOffset === undefined ||
    !['first', 'retry', 'takeover'].includes(stored.cause) ||
    !Number.isSafeInteger(stored.lastSeq) ||
    !Number.isSafeInteger(stored.contiguousFromSeq)
  ) {
    return undefined;
  }
  return {
    stream,
    generation,
    cause: stored.cause,
    startOffset,
    lastSeq: stored.lastSeq,
    lastOffset,
    contiguousFromSeq: stored.contiguousFromSeq,
    contiguousFromOffset,
    terminal: terminalOf(stored.terminal, terminalOffset),
    position,
    ...progressBaseOf(stored.progressBase),
    ...(stored.snapshot === undefined ? {} : { snapshot: stored.snapshot }),
    ...wholeStreamOf(stored, big),
  };
}

/** A stored head's final record, with its offset decoded. */
function terminalOf(stored: StoredHead['terminal'], offset: bigint | null): StreamHead['terminal'] {
  if (stored === null || offset === null) return undefined;
  const { seq, payload, inLog } = stored;
  return { seq, offset, payload, ...(inLog === true ? { inLog } : {}) };
}

/** Where a stored head's whole stream starts and its generation's base, when valid. */
function wholeStreamOf(
  stored: StoredHead,
  big: (value: unknown) => bigint | undefined,
): { firstOffset?: bigint; seqBase?: number } {
  const firstOffset = big(stored.firstOffset);
  const { seqBase } = stored;
  return {
    ...(firstOffset === undefined ? {} : { firstOffset }),
    ...(seqBase !== undefined && Number.isSafeInteger(seqBase) && seqBase > 0 ? { seqBase } : {}),
  };
}

/** A stored head's progress base, when it has a valid one. */
function progressBaseOf(value: unknown): { progressBase?: number } {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? { progressBase: value }
    : {};
}
