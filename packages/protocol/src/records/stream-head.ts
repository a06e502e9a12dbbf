import type { Generation, GenerationCause } from '../ids/generation.js';
import { sameGeneration } from '../ids/generation.js';
import type { StreamId } from '../ids/ids.js';
import type { StampedRecord } from './record.js';

/** The final record of a stream, kept in its head so the result outlives the events' retention. */
export interface TerminalRecord<Payload = unknown> {
  readonly seq: number;
  readonly offset: bigint;
  readonly payload: Payload | undefined;
  /**
   * The final message was too large for the head (it was written in parts): `payload` is absent
   * and readers take the message from `events` at `offset`, while the log holds it.
   */
  readonly inLog?: true;
}

/**
 * What is known of one stream from its records up to `position` (exclusive). Stored (compacted) at
 * generation start and at terminal, and folded forward from records by anyone reading the log.
 */
export interface StreamHead<Payload = unknown> {
  readonly stream: StreamId;
  /** The current generation: every other generation's records are superseded. */
  readonly generation: Generation;
  readonly cause: GenerationCause;
  /** Offset of the current generation's first record seen (its start record, when it was seen). */
  readonly startOffset: bigint;
  /** Highest seq seen of the current generation (0: none yet). */
  readonly lastSeq: number;
  readonly lastOffset: bigint;
  /**
   * Seq and offset of the first record after the latest hole in the current generation: events
   * from here to `lastSeq` are contiguous. Seq 1 (at `startOffset`) when there was no hole.
   */
  readonly contiguousFromSeq: number;
  readonly contiguousFromOffset: bigint;
  /** Set by the first terminal record of the current generation; nothing after it counts. */
  readonly terminal: TerminalRecord<Payload> | undefined;
  /** The head reflects every record of this stream below this offset. */
  readonly position: bigint;
  /**
   * The highest progress the stream's earlier generations wrote before this one started: its own
   * progress continues from there (the worker's progress continuity). Stored heads only; 0 or
   * absent for a first generation and for heads written before it existed.
   */
  readonly progressBase?: number;
  /**
   * What the writer keeps of the stream's state beside its head — a task's status — so a reader
   * needs neither the stream's records nor the partition's traffic around them. Stored heads only;
   * absent from heads written before it existed (their readers fold the records).
   */
  readonly snapshot?: unknown;
  /**
   * Where the stream's first generation started: a reader of all its generations (a task's event
   * stream, `tasks/stream`) reads from here. Stored heads only; absent from heads written before it.
   */
  readonly firstOffset?: bigint;
  /**
   * How many records the stream's earlier generations wrote (their `lastSeq`s, summed) before this
   * one started: a record's place in the whole stream is `seqBase + seq - 1`. Stored heads only.
   */
  readonly seqBase?: number;
}

/** What folding one record did, for callers that count drops and for the delivery rules. */
export type FoldEffect =
  | 'started'
  | 'superseded'
  | 'appended'
  | 'gap'
  | 'terminal'
  | 'duplicate'
  | 'dropped-superseded'
  | 'dropped-after-terminal'
  | 'dropped-behind-position';

export interface FoldResult<Payload> {
  readonly head: StreamHead<Payload> | undefined;
  readonly effect: FoldEffect;
}

/**
 * Folds one record, in log order, into the head of its stream (docs/architecture.md): a generation
 * with a higher attempt supersedes the current one (unless the stream is terminal); records of a
 * superseded generation are dropped; the first terminal record of the current generation wins and
 * anything after it is ignored. Pure: returns a new head.
 */
export function foldStreamHead<Payload>(
  head: StreamHead<Payload> | undefined,
  record: StampedRecord<Payload>,
): FoldResult<Payload> {
  const { stamp, offset } = record;
  if (head !== undefined && offset < head.position)
    return { head, effect: 'dropped-behind-position' };
  const position = offset + 1n;

  if (
    head === undefined ||
    (head.terminal === undefined && stamp.generation.attempt > head.generation.attempt)
  ) {
    const started = stamp.kind === 'generation-start';
    const lastSeq = stamp.seq;
    const fresh: StreamHead<Payload> = {
      stream: stamp.stream,
      generation: stamp.generation,
      cause: stamp.cause ?? (head === undefined ? 'first' : 'takeover'),
      startOffset: offset,
      lastSeq,
      lastOffset: offset,
      // A generation first seen mid-way (its start evicted or read past) is contiguous from here.
      contiguousFromSeq: started ? 1 : lastSeq,
      contiguousFromOffset: offset,
      terminal:
        stamp.kind === 'terminal' ? { seq: stamp.seq, offset, payload: record.payload } : undefined,
      position,
    };
    return { head: fresh, effect: head === undefined ? 'started' : 'superseded' };
  }

  if (head.terminal !== undefined)
    return { head: { ...head, position }, effect: 'dropped-after-terminal' };
  if (!sameGeneration(head.generation, stamp.generation)) {
    return { head: { ...head, position }, effect: 'dropped-superseded' };
  }
  if (stamp.kind === 'generation-start' || stamp.seq <= head.lastSeq) {
    return { head: { ...head, position }, effect: 'duplicate' };
  }

  const gap = stamp.seq !== head.lastSeq + 1;
  const next: StreamHead<Payload> = {
    ...head,
    lastSeq: stamp.seq,
    lastOffset: offset,
    contiguousFromSeq: gap ? stamp.seq : head.contiguousFromSeq,
    contiguousFromOffset: gap ? offset : head.contiguousFromOffset,
    terminal:
      stamp.kind === 'terminal' ? { seq: stamp.seq, offset, payload: record.payload } : undefined,
    position,
  };
  if (stamp.kind === 'terminal') return { head: next, effect: 'terminal' };
  return { head: next, effect: gap ? 'gap' : 'appended' };
}
