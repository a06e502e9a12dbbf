import {
  logIdOf,
  type EventClaim,
  type EventIdProblem,
  type EventIdVerification,
  type LogIdentity,
} from '../ids/event-id.js';
import { sameGeneration, type Generation } from '../ids/generation.js';
import type { StreamId } from '../ids/ids.js';
import type { ResetReason } from './stream-cursor.js';
import type { StreamHead, TerminalRecord } from '../records/stream-head.js';

/** Why a claim is refused with 400: the client mis-tracks its state, or the id is not genuine. */
export type InvalidReason =
  EventIdProblem | 'beyond-tail' | 'unknown-generation' | 'unknown-stream' | 'position-mismatch';

/** Why a resume is honoured as a plain continuation. */
export type ResumeReason = 'contiguous' | 'from-priming' | 'complete';

/** A finished stream's generation and final record, as its head knows them. */
export interface StreamEnd<Payload = unknown> {
  readonly generation: Generation;
  readonly record: TerminalRecord<Payload>;
}

/** What the caller reads and sends next. */
export type ReplayPlan<Payload = unknown> =
  | {
      /** Read the partition from `fromOffset` (inclusive) and feed a `StreamCursor` with these settings. */
      readonly kind: 'read';
      readonly fromOffset: bigint;
      readonly generation: Generation | undefined;
      readonly nextSeq: number | undefined;
      readonly clientHasEvents: boolean;
      /** The stream's known end, for `StreamCursorOptions.terminal`: read nothing past it. */
      readonly terminal: StreamEnd<Payload> | undefined;
    }
  /** The stream finished and its events are gone: send the final record kept in its head, then end. */
  | {
      readonly kind: 'final';
      readonly generation: Generation;
      readonly terminal: TerminalRecord<Payload>;
    }
  /** The client already has everything, the final record included: end the stream. */
  | { readonly kind: 'none' };

export type ResumeDecision<Payload = unknown> =
  | {
      readonly outcome: 'resume';
      readonly reason: ResumeReason;
      readonly stream: StreamId;
      readonly plan: ReplayPlan<Payload>;
    }
  | {
      readonly outcome: 'reset';
      readonly reason: ResetReason;
      readonly stream: StreamId;
      /** The generation to announce in the reset notification (undefined: none has started yet). */
      readonly generation: Generation | undefined;
      readonly plan: ReplayPlan<Payload>;
      /** For logs and spans; not sent to clients. */
      readonly detail: string;
    }
  | { readonly outcome: 'invalid'; readonly reason: InvalidReason; readonly detail: string };

export interface ResumeInput<Payload = unknown> {
  /** The `Last-Event-ID`, verified for the requesting session (`verifyEventId`). */
  readonly claim: EventIdVerification;
  /** The log the session's events are in now. */
  readonly logIdentity: LogIdentity;
  /** The session's partition index now. */
  readonly partition: number;
  readonly logStartOffset: bigint;
  readonly highWatermark: bigint;
  /**
   * The head of the claimed stream, folded at least up to the stored head's position; undefined
   * when nothing is known of the stream. A head behind the claim is fine: claims past
   * `head.position` are checked while reading, by the `StreamCursor`.
   */
  readonly head: StreamHead<Payload> | undefined;
}

/**
 * The resume decision (docs/architecture.md, "The resume decision"): `resume`, `reset` or `invalid`, each with a
 * machine-readable reason and the plan for what to read next. Pure and total: never throws, never
 * falls back to "replay from the beginning".
 */
export function decideResume<Payload>(input: ResumeInput<Payload>): ResumeDecision<Payload> {
  const { claim: verification, head } = input;
  if (!verification.ok) return invalid(verification.problem, verification.detail);
  const claim = verification.claim;

  if (claim.logId !== logIdOf(input.logIdentity) || claim.partition !== input.partition) {
    const detail = claim.logId !== logIdOf(input.logIdentity) ? 'the log' : 'the partition';
    return reset(
      'log-replaced',
      claim.stream,
      head,
      currentPlan(head, input.logStartOffset),
      `${detail} changed`,
    );
  }

  if (claim.generation === undefined) return decidePriming(input, claim);

  if (claim.offset >= input.highWatermark) {
    return invalid(
      'beyond-tail',
      `offset ${claim.offset} is at or past the high watermark ${input.highWatermark}`,
    );
  }
  const evicted = claim.offset + 1n < input.logStartOffset;

  if (head === undefined) {
    // Nothing known of the stream: trust the MAC while the events after the claim are still held.
    if (evicted)
      return invalid(
        'unknown-stream',
        'no head for the stream and its events are gone (its result expired)',
      );
    return resume('contiguous', claim.stream, readAfter(claim, claim.generation, undefined));
  }

  if (sameGeneration(claim.generation, head.generation))
    return decideCurrentGeneration(input, claim, head, evicted);
  return decideOtherGeneration(input, { ...claim, generation: claim.generation }, head, evicted);
}

/** The claim names the stream's current generation: go on, unless it is past the end or a hole. */
function decideCurrentGeneration<Payload>(
  input: ResumeInput<Payload>,
  claim: EventClaim,
  head: StreamHead<Payload>,
  evicted: boolean,
): ResumeDecision<Payload> {
  const headSawClaim = claim.offset < head.position;
  if (claim.offset < head.startOffset) {
    return invalid(
      'position-mismatch',
      `offset ${claim.offset} is before its generation started at ${head.startOffset}`,
    );
  }
  if (head.terminal !== undefined) {
    if (claim.seq > head.terminal.seq)
      return invalid('beyond-tail', `seq ${claim.seq} is past the final seq ${head.terminal.seq}`);
    if (claim.seq === head.terminal.seq) return resume('complete', claim.stream, { kind: 'none' });
  }
  if (headSawClaim && claim.seq > head.lastSeq) {
    return invalid('beyond-tail', `seq ${claim.seq} is past the last seq ${head.lastSeq}`);
  }
  if (evicted) {
    const reason = head.terminal === undefined ? 'evicted' : 'terminal-evicted';
    return reset(
      reason,
      claim.stream,
      head,
      currentPlan(head, input.logStartOffset),
      'events after the claim were deleted',
    );
  }
  if (headSawClaim && claim.seq + 1 < head.contiguousFromSeq) {
    return reset(
      'seq-gap',
      claim.stream,
      head,
      currentPlan(head, input.logStartOffset),
      `events after seq ${claim.seq} are missing`,
    );
  }
  return resume('contiguous', claim.stream, readAfter(claim, head.generation, head));
}

/** The claim names another generation: an older one was superseded; a newer one is not known yet. */
function decideOtherGeneration<Payload>(
  input: ResumeInput<Payload>,
  claim: EventClaim & { readonly generation: Generation },
  head: StreamHead<Payload>,
  evicted: boolean,
): ResumeDecision<Payload> {
  const attempt = claim.generation.attempt;
  const current = head.generation;
  if (attempt < current.attempt) {
    return reset(
      'generation-superseded',
      claim.stream,
      head,
      currentPlan(head, input.logStartOffset),
      `attempt ${attempt} was superseded by ${current.attempt}`,
    );
  }
  if (attempt > current.attempt && claim.offset >= head.position) {
    // The head has not caught up with the claim (it is folded only to its position): the
    // generation is newer than what the head knows, and the cursor checks the read.
    if (evicted)
      return invalid(
        'unknown-generation',
        'generation unknown to the head and its events are gone',
      );
    return resume('contiguous', claim.stream, readAfter(claim, claim.generation, undefined));
  }
  return invalid(
    'unknown-generation',
    `attempt ${attempt} of epoch ${claim.generation.epoch} was never issued for this stream`,
  );
}

function decidePriming<Payload>(
  input: ResumeInput<Payload>,
  claim: EventClaim,
): ResumeDecision<Payload> {
  const { head } = input;
  // A priming id carries the offset the stream's first record will be at or after.
  if (claim.offset > input.highWatermark) {
    return invalid(
      'beyond-tail',
      `priming offset ${claim.offset} is past the high watermark ${input.highWatermark}`,
    );
  }
  if (head === undefined) {
    // No head, and the log moved past the priming position: the stream's result expired (or its
    // request waited longer than the retention). Nothing will arrive; waiting would be a silent
    // empty stream.
    if (claim.offset < input.logStartOffset)
      return invalid(
        'unknown-stream',
        'no head for the stream and the records after its priming position are gone (its result expired)',
      );
    return resume('from-priming', claim.stream, read(claim.offset, undefined, 1, false, undefined));
  }
  if (head.startOffset < claim.offset) {
    return invalid(
      'position-mismatch',
      `the stream started at ${head.startOffset}, before the priming position ${claim.offset}`,
    );
  }
  const plan = currentPlan(head, input.logStartOffset);
  if (plan.kind === 'read' && plan.fromOffset === head.startOffset && plan.nextSeq === 1) {
    return resume('from-priming', claim.stream, plan);
  }
  const reason = head.terminal === undefined ? 'evicted' : 'terminal-evicted';
  return reset(reason, claim.stream, head, plan, 'the start of the current generation was deleted');
}

/**
 * Where the current generation can be read from: its start when it is still held and had no hole,
 * else the kept final record of a finished stream, else the earliest contiguous point still held.
 */
function currentPlan<Payload>(
  head: StreamHead<Payload> | undefined,
  logStartOffset: bigint,
): ReplayPlan<Payload> {
  if (head === undefined) return read(logStartOffset, undefined, undefined, false, undefined);
  const { generation } = head;
  const terminal = terminalOf(head);
  if (head.startOffset >= logStartOffset && head.contiguousFromSeq === 1) {
    return read(head.startOffset, generation, 1, false, terminal);
  }
  if (head.terminal !== undefined) return { kind: 'final', generation, terminal: head.terminal };
  if (head.contiguousFromOffset >= logStartOffset) {
    return read(head.contiguousFromOffset, generation, head.contiguousFromSeq, false, terminal);
  }
  return read(logStartOffset, generation, undefined, false, terminal);
}

/** Continue after the claim; the head's end applies when it is the claim's generation that ended. */
function readAfter<Payload>(
  claim: EventClaim,
  generation: Generation,
  head: StreamHead<Payload> | undefined,
): ReplayPlan<Payload> {
  const terminal =
    head !== undefined && sameGeneration(head.generation, generation)
      ? terminalOf(head)
      : undefined;
  return read(claim.offset + 1n, generation, claim.seq + 1, true, terminal);
}

function terminalOf<Payload>(head: StreamHead<Payload>): StreamEnd<Payload> | undefined {
  return head.terminal === undefined
    ? undefined
    : { generation: head.generation, record: head.terminal };
}

function read<Payload>(
  fromOffset: bigint,
  generation: Generation | undefined,
  nextSeq: number | undefined,
  clientHasEvents: boolean,
  terminal: StreamEnd<Payload> | undefined,
): ReplayPlan<Payload> {
  return { kind: 'read', fromOffset, generation, nextSeq, clientHasEvents, terminal };
}

function resume<Payload>(
  reason: ResumeReason,
  stream: StreamId,
  plan: ReplayPlan<Payload>,
): ResumeDecision<Payload> {
  return { outcome: 'resume', reason, stream, plan };
}

function reset<Payload>(
  reason: ResetReason,
  stream: StreamId,
  head: StreamHead<Payload> | undefined,
  plan: ReplayPlan<Payload>,
  detail: string,
): ResumeDecision<Payload> {
  return { outcome: 'reset', reason, stream, generation: head?.generation, plan, detail };
}

function invalid<Payload>(reason: InvalidReason, detail: string): ResumeDecision<Payload> {
  return { outcome: 'invalid', reason, detail };
}
