import { sameGeneration, type Generation } from '../ids/generation.js';
import type { StampedRecord } from '../records/record.js';
import type { StreamId } from '../ids/ids.js';
import type { TerminalRecord } from '../records/stream-head.js';

/** Why a client must discard what it has of a stream and start over. */
export type ResetReason =
  'generation-superseded' | 'evicted' | 'seq-gap' | 'terminal-evicted' | 'log-replaced';

/** One step of delivering a stream to one client. */
export type CursorStep<Payload> =
  | {
      readonly kind: 'deliver';
      readonly record: StampedRecord<Payload>;
      /** Set when the client must first be told to discard everything it has (a reset notification). */
      readonly resetBefore?: { readonly reason: ResetReason; readonly generation: Generation };
      /** The record is the terminal one: the stream ends after it. */
      readonly final: boolean;
    }
  /** A new generation started (its start record is `record`): tell the client to discard what it has. */
  | {
      readonly kind: 'reset-only';
      readonly reason: ResetReason;
      readonly generation: Generation;
      readonly record: StampedRecord<Payload>;
    }
  | { readonly kind: 'skip'; readonly why: SkipReason };

export type SkipReason = 'superseded' | 'duplicate' | 'after-terminal' | 'control' | 'behind-start';

export interface StreamCursorOptions {
  /** The generation the client is in (from its claim); undefined when it has seen no event yet. */
  generation: Generation | undefined;
  /**
   * The seq the client needs next. Undefined: accept the first record of the generation found,
   * then require contiguity (a reset to "the earliest contiguous point still held").
   */
  nextSeq: number | undefined;
  /** Whether the client holds events it would have to discard on a change of generation. */
  clientHasEvents: boolean;
  /** Records below this offset are not part of this delivery. */
  fromOffset: bigint;
  /**
   * The stream's end when its head already knows it: the generation that finished, and its final
   * record. Records of any other generation are skipped, even if the final record itself was
   * compacted away; `complete()` then delivers the kept final record.
   */
  terminal?:
    { readonly generation: Generation; readonly record: TerminalRecord<unknown> } | undefined;
}

/**
 * The delivery rules for one client's view of one stream, shared by replay and live delivery: it
 * validates the records read after a claim (contiguous seq, one generation) and turns what it finds
 * into steps. A new generation becomes a reset (when the client has something to discard); a seq
 * hole found mid-read becomes a reset to the earliest contiguous point; records of superseded
 * generations and anything after the terminal record are skipped. Feed it only records of its
 * stream, in log order.
 */
export class StreamCursor<Payload = unknown> {
  private generation: Generation | undefined;
  private nextSeq: number | undefined;
  private hasEvents: boolean;
  private finished = false;
  private readonly fromOffset: bigint;
  private readonly terminal: StreamCursorOptions['terminal'];

  constructor(options: StreamCursorOptions) {
    this.terminal = options.terminal;
    this.generation = options.generation;
    this.nextSeq = options.nextSeq;
    this.hasEvents = options.clientHasEvents;
    this.fromOffset = options.fromOffset;
  }

  /** True once the terminal record was delivered. */
  get done(): boolean {
    return this.finished;
  }

  /** The generation being delivered, if known yet. */
  get currentGeneration(): Generation | undefined {
    return this.generation;
  }

  accept(record: StampedRecord<Payload>): CursorStep<Payload> {
    const { stamp } = record;
    const skip = this.skippedBeforeAnything(record);
    if (skip !== undefined) return { kind: 'skip', why: skip };

    let resetBefore: { reason: ResetReason; generation: Generation } | undefined;
    if (this.generation === undefined || stamp.generation.attempt > this.generation.attempt) {
      // A later execution of the stream: what the client holds (if anything) is from another one.
      const superseding = this.generation !== undefined;
      if (superseding && this.hasEvents) {
        resetBefore = { reason: 'generation-superseded', generation: stamp.generation };
        this.hasEvents = false;
      }
      this.generation = stamp.generation;
      if (superseding) this.nextSeq = 1;
      if (stamp.kind === 'generation-start') {
        this.nextSeq = 1;
        return resetBefore === undefined
          ? { kind: 'skip', why: 'control' }
          : { kind: 'reset-only', ...resetBefore, record };
      }
    } else if (!sameGeneration(stamp.generation, this.generation)) {
      return { kind: 'skip', why: 'superseded' };
    }

    if (stamp.kind === 'generation-start') return { kind: 'skip', why: 'control' };
    if (this.nextSeq === undefined) this.nextSeq = stamp.seq;
    if (stamp.seq < this.nextSeq) return { kind: 'skip', why: 'duplicate' };
    if (stamp.seq > this.nextSeq && resetBefore === undefined) {
      // A hole (eviction, compaction): what follows is not a continuation of what the client has.
      resetBefore = { reason: 'seq-gap', generation: stamp.generation };
    }
    this.nextSeq = stamp.seq + 1;
    this.hasEvents = true;
    const final = stamp.kind === 'terminal';
    if (final) this.finished = true;
    return resetBefore === undefined
      ? { kind: 'deliver', record, final }
      : { kind: 'deliver', record, final, resetBefore };
  }

  /** Records skipped whatever the cursor's generation: before its start, after the end it knows. */
  private skippedBeforeAnything(record: StampedRecord<Payload>): SkipReason | undefined {
    if (record.offset < this.fromOffset) return 'behind-start';
    if (this.finished) return 'after-terminal';
    const end = this.terminal?.generation;
    if (end === undefined || sameGeneration(record.stamp.generation, end)) return undefined;
    return record.stamp.generation.attempt > end.attempt ? 'after-terminal' : 'superseded';
  }

  /**
   * Call when a read reached the tail without the final record the head knows of (compaction
   * removed it): delivers the kept final record through the same rules, so a hole before it still
   * becomes a reset. Undefined when there is nothing to do.
   */
  complete(stream: StreamId): CursorStep<Payload> | undefined {
    if (this.finished || this.terminal === undefined) return undefined;
    const { generation, record } = this.terminal;
    const payload = record.payload as Payload | undefined;
    return this.accept({
      offset: record.offset,
      stamp: { stream, generation, seq: record.seq, kind: 'terminal' },
      ...(payload === undefined ? {} : { payload }),
    });
  }
}
