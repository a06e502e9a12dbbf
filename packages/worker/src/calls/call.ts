import { trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { SHARE_HEADER, type LogRecord } from '@tidemark/protocol';
import { slotShareOf, type Slot, type SlotKind } from './call-slots.js';
import { contextFromHeaders, recordRequestQueueLag, startMessagingSpan } from '@tidemark/otel';
import type { PartitionReader } from './partition-reader.js';
import type { LaneContext } from './lane-context.js';

/**
 * How a call left this worker:
 * - `answered`: its stream has its final message (a result, an error, a refusal, a join): its
 *   request's offset may be committed;
 * - `not-started`: it failed before it began; whoever caught that answers it and marks it done;
 * - `stopped`: its partition moved, its session was dropped, or the worker stops — unanswered here,
 *   so its offset stays uncommitted and the partition's next owner runs it.
 */
export type CallEnd = 'answered' | 'not-started' | 'stopped';

/**
 * One request a worker runs, on any lane: it holds a call slot (taken before it starts: reading
 * the partition waits while all are taken), its `process` span in the trace the gateway began, and
 * its request's offset. Ending it — once, however many paths reach the end — gives the slot back,
 * ends the span and, when it was answered, lets the offset be committed.
 */
export class Call {
  private ended: CallEnd | undefined;
  /** Resting (`idle`): not counted among the partition's running calls meanwhile. */
  private resting = false;
  /** The span's context: what the call runs in. */
  readonly context: Context;

  private constructor(
    private readonly lane: LaneContext,
    private readonly reader: PartitionReader,
    private slot: Slot,
    readonly offset: bigint,
    private readonly span: Span,
    parent: Context,
  ) {
    this.context = trace.setSpan(parent, span);
    reader.callStarted();
  }

  /** Takes a slot for the request `record` holds (waiting while all are taken) and starts its span. */
  static async take(
    lane: LaneContext,
    reader: PartitionReader,
    record: LogRecord,
    method: string,
    attributes: Attributes,
    /** `task`: a task's slot from the start (a task woken from a sleep), not a call's first. */
    kind: SlotKind = 'call',
  ): Promise<Call> {
    const slot = await lane.slots.acquire(slotShareOf(shareOf(record), { method }), kind);
    // A woken task waited for its wake, not in the queue: its lag is not the queue's.
    if (kind === 'call') recordRequestQueueLag(Date.now() - record.timestampMs);
    const parent = contextFromHeaders(record.headers);
    const span = startMessagingSpan(
      {
        system: lane.options.log.kind,
        operation: 'process',
        name: `process ${method}`,
        topic: lane.options.topics.requests,
        partition: reader.partition,
        offset: record.offset,
        attributes,
      },
      parent,
    );
    return new Call(lane, reader, slot, record.offset, span, parent);
  }

  /**
   * Gives the slot back while the call waits (a task waiting for its user, a call asleep), then
   * retakes it. Meanwhile it does not count as running: a drain does not wait for it — nothing of
   * it runs, and the partition's next owner goes on with it from the log.
   */
  async idle<T>(waiting: Promise<T>): Promise<T> {
    const { kind, share } = this.slot;
    this.slot.release();
    if (!this.resting && this.ended === undefined) this.reader.callEnded();
    this.resting = true;
    try {
      return await waiting;
    } finally {
      this.resting = false;
      if (this.ended === undefined) this.reader.callStarted();
      await this.retake(share, kind);
    }
  }

  /**
   * The call became a task, which may run for hours: it moves from its call slot to a task slot
   * (waiting, fairly, while none is free), so long tasks never hold what short calls need.
   */
  async asTask(): Promise<void> {
    if (this.slot.kind === 'task') return;
    const { share } = this.slot;
    this.slot.release();
    await this.retake(share, 'task');
  }

  /** Takes a slot again — unless the call ended meanwhile: an ended call holds none. */
  private async retake(share: string, kind: SlotKind): Promise<void> {
    if (this.ended !== undefined) return;
    const slot = await this.lane.slots.acquire(share, kind);
    if (this.ended === undefined) this.slot = slot;
    else slot.release();
  }

  /** Ends the call (the first end counts; later ones change nothing). */
  finish(how: CallEnd): void {
    if (this.ended !== undefined) return;
    this.ended = how;
    this.span.end();
    this.slot.release();
    if (!this.resting) this.reader.callEnded();
    if (how === 'answered') this.reader.done(this.offset);
  }
}

/** What the request's sender's shares are counted by (a record from before shares: one for all). */
function shareOf(record: LogRecord): string {
  return record.headers.find(([name]) => name === SHARE_HEADER)?.[1] ?? '';
}
