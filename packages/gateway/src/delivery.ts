import { PartitionTail, type Subscription } from '@tidemark/log';
import type { LogRecord } from '@tidemark/protocol';
import {
  decodeStamp,
  encodeEventId,
  resetNotification,
  type StreamCursor,
  type CursorStep,
  type Keyring,
  type LogIdentity,
  type LogPort,
  type SessionId,
  type StreamEnd,
  type StreamId,
} from '@tidemark/protocol';
import { SpanKind, trace } from '@opentelemetry/api';
import {
  ATTR_MCP_SESSION_ID,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_KAFKA_OFFSET,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  contextFromHeaders,
  recordDeliveryLag,
  recordReplayLength,
  recordSupersededDropped,
  recordTailReaders,
  tidemarkTracer,
} from '@tidemark/otel';
import type { SseStream } from './sse.js';

/** One shared tail per partition of `events` in this gateway, started and stopped with their streams. */
export class EventTails {
  private readonly tails = new Map<number, PartitionTail>();

  constructor(
    private readonly port: LogPort,
    readonly topic: string,
    private readonly maxWaitMs: number,
  ) {}

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
  session: SessionId;
  stream: StreamId;
  partition: number;
  log: LogIdentity;
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
  /** Whether events carry ids (legacy lane) or not (modern lane: no resume). Default true. */
  eventIds?: boolean;
  /** A resume: the events delivered before `caughtUpAt` are counted as its replay length. */
  replay?: boolean;
}

/**
 * Streams one MCP stream from the log to one SSE response, through the shared partition tail and
 * the protocol's delivery rules: each message gets its event id, a new generation or a hole
 * becomes a reset notification, superseded records are dropped, and the final record ends it.
 */
export function deliver(options: DeliveryOptions): Subscription {
  const { sse, cursor, session, stream } = options;
  const holder: { subscription?: Subscription } = {};
  let finished = false;
  let replayed = options.replay === true ? 0 : undefined;
  const caughtUp = () => {
    if (replayed === undefined) return;
    recordReplayLength(replayed);
    replayed = undefined;
  };
  recordTailReaders(options.partition, 1);
  const finish = (reason: 'final' | 'closed' | 'error') => {
    if (finished) return;
    finished = true;
    recordTailReaders(options.partition, -1);
    caughtUp();
    holder.subscription?.close();
    if (reason !== 'closed') sse.end();
    options.onEnd?.(reason);
  };
  const idFor = (
    offset: bigint,
    generation: Parameters<typeof encodeEventId>[0]['generation'],
    seq: number,
  ) =>
    options.eventIds === false
      ? undefined
      : encodeEventId(
          { log: options.log, partition: options.partition, offset, generation, seq, stream },
          session,
          options.keyring,
        );

  const apply = (step: CursorStep<unknown>) => {
    if (step.kind === 'skip') {
      if (step.why === 'superseded') recordSupersededDropped();
      return;
    }
    if (step.kind === 'reset-only') {
      sse.event(
        idFor(step.record.offset, step.generation, 0),
        resetNotification(step.reason, step.generation),
      );
      return;
    }
    if (step.resetBefore !== undefined)
      sse.event(undefined, resetNotification(step.resetBefore.reason, step.resetBefore.generation));
    const { stamp } = step.record;
    if (step.record.payload !== undefined) {
      sse.event(idFor(step.record.offset, stamp.generation, stamp.seq), step.record.payload);
      if (replayed !== undefined) replayed++;
    }
    if (step.final) finish('final');
  };

  /**
   * Applies the cursor's step for one record inside the record's trace: a `receive` span (the
   * shared tail read it) with an `sse write` span under it. A record without a trace (or a
   * process without an SDK) costs one header scan.
   */
  const applyRecord = (record: LogRecord, step: CursorStep<unknown>) => {
    const live = record.offset >= options.caughtUpAt;
    if (live) {
      caughtUp();
      if (step.kind === 'deliver') recordDeliveryLag(Date.now() - record.timestampMs);
    }
    const parent = contextFromHeaders(record.headers);
    const superseded = step.kind === 'skip' && step.why === 'superseded';
    if (trace.getSpanContext(parent) === undefined || (step.kind === 'skip' && !superseded))
      return apply(step);
    const tracer = tidemarkTracer();
    const receive = tracer.startSpan(
      `receive ${options.tails.topic}`,
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          [ATTR_MESSAGING_SYSTEM]: 'kafka',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'receive',
          [ATTR_MESSAGING_DESTINATION_NAME]: options.tails.topic,
          [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(options.partition),
          [ATTR_MESSAGING_KAFKA_OFFSET]: Number(record.offset),
          [ATTR_MCP_SESSION_ID]: session,
        },
      },
      parent,
    );
    if (step.kind === 'skip') {
      // A zombie's record: the event lands in the zombie's own trace, where its owner will look.
      receive.addEvent('tidemark.superseded_dropped');
      apply(step);
      return receive.end();
    }
    const write = tracer.startSpan('sse write', {}, trace.setSpan(parent, receive));
    if (step.kind === 'reset-only' || step.resetBefore !== undefined)
      write.addEvent('tidemark.reset', {
        'tidemark.reset.reason':
          step.kind === 'reset-only' ? step.reason : step.resetBefore!.reason,
      });
    try {
      apply(step);
    } finally {
      write.end();
      receive.end();
    }
  };

  const completeIfCaughtUp = (lastOffset: bigint) => {
    if (lastOffset + 1n >= options.caughtUpAt) caughtUp();
    if (finished || options.terminal === undefined || lastOffset + 1n < options.caughtUpAt) return;
    // Only a read that went past the final record's offset without meeting it may deliver the
    // kept one (compaction removed it); short of it, the record is still to come.
    if (lastOffset < options.terminal.record.offset) return;
    const step = cursor.complete(stream);
    if (step !== undefined) apply(step);
  };

  holder.subscription = options.tails.tail(options.partition).subscribe(options.fromOffset, {
    // A long catch-up is written in chunks: one syscall per chunk, and the first events of a
    // replay reach the client before the whole batch is processed.
    onRecords: (records) => {
      for (let i = 0; i < records.length; i += WRITE_CHUNK)
        sse.batch(() => onRecords(records.slice(i, i + WRITE_CHUNK)));
    },
    onError: () => finish('error'),
  });
  function onRecords(records: readonly LogRecord[]): void {
    for (const record of records) {
      if (finished) return;
      if (record.key !== session) continue;
      const decoded = decodeStamp(record.headers);
      if (!decoded.ok || decoded.stamp.stream !== stream) continue;
      let payload: unknown;
      try {
        payload =
          record.value === null ? undefined : JSON.parse(Buffer.from(record.value).toString());
      } catch {
        continue;
      }
      applyRecord(
        record,
        cursor.accept({
          offset: record.offset,
          stamp: decoded.stamp,
          ...(payload === undefined ? {} : { payload }),
        }),
      );
    }
    const last = records.at(-1);
    if (last !== undefined) completeIfCaughtUp(last.offset);
  }
  if (options.fromOffset >= options.caughtUpAt) completeIfCaughtUp(options.fromOffset - 1n);
  void sse.closed.then(() => finish('closed'));
  return { close: () => finish('closed') };
}
