import { PartitionTail, type Subscription, type TailListener } from '@tidemark/log';
import { JsonText, type LogRecord } from '@tidemark/protocol';
import {
  eventIdMinter,
  readStampedFrame,
  resetNotification,
  type StreamCursor,
  type CursorStep,
  type Generation,
  type Keyring,
  type LogIdentity,
  type LogPort,
  type RequestId,
  type PartitionKey,
  type StreamEnd,
  type StreamId,
} from '@tidemark/protocol';
import { trace, type Context, type Span } from '@opentelemetry/api';
import {
  ATTR_MCP_SESSION_ID,
  contextFromHeaders,
  recordDeliveryLag,
  recordReplayLength,
  recordSupersededDropped,
  recordTailReaders,
  spansPerEvent,
  startMessagingSpan,
  tidemarkTracer,
} from '@tidemark/otel';
import type { SseStream } from './http/sse.js';

/** One shared tail per partition of `events` in this gateway, started and stopped with their streams. */
export class EventTails {
  private readonly tails = new Map<number, PartitionTail>();

  constructor(
    private readonly port: LogPort,
    readonly topic: string,
    private readonly maxWaitMs: number,
  ) {}

  /** `messaging.system` of the log the tails read. */
  get system(): string {
    return this.port.kind;
  }

  tail(partition: number): PartitionTail {
    let tail = this.tails.get(partition);
    if (tail === undefined) {
      tail = new PartitionTail({
        port: this.port,
        topic: this.topic,
        partition,
        maxWaitMs: this.maxWaitMs,
      });
      this.tails.set(partition, tail);
    }
    return tail;
  }

  /** Live streams per partition, for metrics and tests. */
  get subscriberCounts(): Map<number, number> {
    return new Map([...this.tails].map(([p, t]) => [p, t.subscriberCount]));
  }

  close(): void {
    for (const tail of this.tails.values()) tail.close();
  }
}

/** Records processed per corked SSE write. */
const WRITE_CHUNK = 64;

export interface DeliveryOptions {
  session: PartitionKey;
  stream: StreamId;
  partition: number;
  logIdentity: LogIdentity;
  keyring: Keyring;
  tails: EventTails;
  sse: SseStream;
  fromOffset: bigint;
  cursor: StreamCursor<unknown>;
  /** The high watermark when the delivery was decided: reaching it means caught up. */
  caughtUpAt: bigint;
  /** A finished stream's end, when its head knows it (to deliver a compacted-away final record). */
  terminal: StreamEnd | undefined;
  /** Called when the stream ended (final record written, or the log refused). */
  onEnd?: (reason: 'final' | 'closed' | 'error') => void;
  /** Whether events carry ids (session lane) or not (stateless lane: no resume). Default true. */
  eventIds?: boolean;
  /** A resume: the events delivered before `caughtUpAt` are counted as its replay length. */
  replay?: boolean;
  /**
   * The id the final message goes out with: a keyed request's own, where the log holds the
   * request under an id of the gateway's (every keyed request has a stream of its own).
   */
  answerAs?: RequestId;
}

type Finish = 'final' | 'closed' | 'error';

/**
 * Streams one MCP stream from the log to one SSE response, through the shared partition tail and
 * the protocol's delivery rules: each message gets its event id, a new generation or a hole
 * becomes a reset notification, superseded records are dropped, and the final record ends it.
 */
export function startDelivery(options: DeliveryOptions): Subscription {
  return new StreamDelivery(options).start();
}

/**
 * The delivery is its own tail listener and subscription (no closures per stream: a gateway
 * holds thousands of these), and mints its event ids from the first event on.
 */
class StreamDelivery implements TailListener, Subscription {
  private subscription: Subscription | undefined;
  private finished = false;
  /** Events replayed so far, while a resume catches up; undefined once live (or not a resume). */
  private replayed: number | undefined;
  private minter:
    ((offset: bigint, generation: Generation | undefined, seq: number) => string) | undefined;

  constructor(private readonly options: DeliveryOptions) {
    this.replayed = options.replay === true ? 0 : undefined;
  }

  start(): Subscription {
    const { options } = this;
    recordTailReaders(options.partition, 1);
    // Catching up, the delivery reads at the client's pace; live, it cannot wait.
    options.sse.paced = options.fromOffset < options.caughtUpAt;
    this.subscription = options.tails
      .tail(options.partition)
      .subscribe(options.fromOffset, this, options.caughtUpAt);
    if (options.fromOffset >= options.caughtUpAt) this.completeIfCaughtUp(options.fromOffset - 1n);
    options.sse.onClose(() => this.finish('closed'));
    return this;
  }

  /**
   * A batch from the tail. A long catch-up is written in chunks: one syscall per chunk, and the
   * first events of a replay reach the client before the whole batch is processed.
   */
  onRecords(records: readonly LogRecord[]): void {
    for (let i = 0; i < records.length; i += WRITE_CHUNK)
      this.options.sse.batch(() => this.deliver(records.slice(i, i + WRITE_CHUNK)));
  }

  onError(): void {
    this.finish('error');
  }

  ready(): Promise<void> | undefined {
    return this.options.sse.whenWritable();
  }

  close(): void {
    this.finish('closed');
  }

  /** The event id of a record (session lane); undefined on the stateless lane. */
  private mint(
    offset: bigint,
    generation: Generation | undefined,
    seq: number,
  ): string | undefined {
    const { options } = this;
    if (options.eventIds === false) return undefined;
    this.minter ??= eventIdMinter(options);
    return this.minter(offset, generation, seq);
  }

  private finish(reason: Finish): void {
    if (this.finished) return;
    this.finished = true;
    recordTailReaders(this.options.partition, -1);
    this.caughtUp();
    this.subscription?.close();
    if (reason !== 'closed') this.options.sse.end();
    this.options.onEnd?.(reason);
  }

  private caughtUp(): void {
    this.options.sse.paced = false;
    if (this.replayed === undefined) return;
    recordReplayLength(this.replayed);
    this.replayed = undefined;
  }

  private deliver(records: readonly LogRecord[]): void {
    const { session, stream, cursor } = this.options;
    for (const record of records) {
      if (this.finished) return;
      if (record.key !== session) continue;
      // The message is written as the worker wrote it: its text, never parsed here.
      const read = readStampedFrame(record);
      if (read === undefined || read.stamp.stream !== stream) continue;
      this.applyRecord(record, cursor.accept(read));
    }
    const last = records.at(-1);
    if (last !== undefined) this.completeIfCaughtUp(last.offset);
  }

  private apply(step: CursorStep<unknown>): void {
    const { sse } = this.options;
    if (step.kind === 'skip') {
      if (step.why === 'superseded') recordSupersededDropped();
      return;
    }
    if (step.kind === 'reset-only') {
      const id = this.mint(step.record.offset, step.generation, 0);
      sse.event(id, resetNotification(step.reason, step.generation));
      return;
    }
    if (step.resetBefore !== undefined)
      sse.event(undefined, resetNotification(step.resetBefore.reason, step.resetBefore.generation));
    const { stamp, offset, payload } = step.record;
    if (payload !== undefined) {
      const answer = step.final ? answeredAs(payload, this.options.answerAs) : payload;
      sse.event(this.mint(offset, stamp.generation, stamp.seq), answer);
      if (this.replayed !== undefined) this.replayed++;
    }
    if (step.final) this.finish('final');
  }

  /**
   * Applies the cursor's step for one record inside the record's trace: a `receive` span (the
   * shared tail read it) with an `sse write` span under it. A record without a trace (or a
   * process without an SDK) costs one header scan.
   */
  private applyRecord(record: LogRecord, step: CursorStep<unknown>): void {
    if (record.offset >= this.options.caughtUpAt) {
      this.caughtUp();
      if (step.kind === 'deliver') recordDeliveryLag(Date.now() - record.timestampMs);
    }
    const superseded = step.kind === 'skip' && step.why === 'superseded';
    // By default an event's spans are its stream's milestones only — the terminal record, a
    // reset, a zombie's dropped record — not every event (spansPerEvent).
    const milestone =
      superseded ||
      step.kind === 'reset-only' ||
      (step.kind === 'deliver' && (step.final || step.resetBefore !== undefined));
    if (!milestone && (step.kind === 'skip' || !spansPerEvent())) return this.apply(step);
    const parent = contextFromHeaders(record.headers);
    if (trace.getSpanContext(parent) === undefined) return this.apply(step);
    const { tails, partition, session } = this.options;
    const receive = startMessagingSpan(
      {
        system: tails.system,
        operation: 'receive',
        topic: tails.topic,
        partition,
        offset: record.offset,
        attributes: { [ATTR_MCP_SESSION_ID]: session },
      },
      parent,
    );
    if (step.kind === 'skip') {
      // A zombie's record: the event lands in the zombie's own trace, where its owner will look.
      receive.addEvent('tidemark.superseded_dropped');
      this.apply(step);
      return receive.end();
    }
    this.writeTraced(step, trace.setSpan(parent, receive), receive);
  }

  private writeTraced(
    step: Exclude<CursorStep<unknown>, { kind: 'skip' }>,
    parent: Context,
    receive: Span,
  ): void {
    const write = tidemarkTracer().startSpan('sse write', {}, parent);
    const reset = step.kind === 'reset-only' ? step.reason : step.resetBefore?.reason;
    if (reset !== undefined) write.addEvent('tidemark.reset', { 'tidemark.reset.reason': reset });
    try {
      this.apply(step);
    } finally {
      write.end();
      receive.end();
    }
  }

  private completeIfCaughtUp(lastOffset: bigint): void {
    const { caughtUpAt, terminal, cursor, stream } = this.options;
    if (lastOffset + 1n >= caughtUpAt) this.caughtUp();
    if (this.finished || terminal === undefined || lastOffset + 1n < caughtUpAt) return;
    // Only a read that went past the final record's offset without meeting it may deliver the
    // kept one (compaction removed it); short of it, the record is still to come.
    if (lastOffset < terminal.record.offset) return;
    const step = cursor.complete(stream);
    if (step !== undefined) this.apply(step);
  }
}

/** A final message with the id its client sent, when the log holds it under another. */
export function answeredAs(payload: unknown, id: RequestId | undefined): unknown {
  if (id === undefined) return payload;
  // A delivery passes messages on as their JSON text (unparsed): the final one is parsed here.
  const message = payload instanceof JsonText ? (JSON.parse(payload.text) as unknown) : payload;
  if (typeof message !== 'object' || message === null || !('id' in message)) return payload;
  return { ...message, id };
}
