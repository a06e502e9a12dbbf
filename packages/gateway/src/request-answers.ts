import type { Response } from 'express';
import {
  partitionForSession,
  readStampedRecord,
  requestStreamId,
  StreamCursor,
  type RequestId,
  type PartitionKey,
  type StreamId,
} from '@tidemark/protocol';
import { answeredAs, startDelivery, type DeliveryOptions } from './delivery.js';
import type { GatewayContext } from './gateway-context.js';
import type { SseStream } from './http/sse.js';

// How a request the gateway passed to a worker is answered over HTTP: a new SSE stream of its
// events, a stream from now (a listen), or one JSON body once the answer is in the log.

/** Where a new request's stream will be read from, and the cursor that reads it. */
export interface NewStream {
  readonly partition: number;
  readonly stream: StreamId;
  readonly highWatermark: bigint;
  readonly cursor: StreamCursor<unknown>;
}

/**
 * Where a new request's stream will be: every record of it comes after the partition's high
 * watermark of now, so it is read from there, from seq 1.
 */
export function newStream(
  ctx: GatewayContext,
  key: PartitionKey,
  requestId: RequestId,
): Promise<NewStream> {
  return streamFromNow(ctx, key, requestStreamId(requestId), 1);
}

/**
 * A stream read from the partition's high watermark of now: a new request's (from seq 1), or the
 * standalone stream (from whatever seq comes next).
 */
export async function streamFromNow(
  ctx: GatewayContext,
  key: PartitionKey,
  stream: StreamId,
  nextSeq: number | undefined,
): Promise<NewStream> {
  const partition = partitionForSession(key, ctx.partitionCount);
  const { highWatermark } = await ctx.eventOffsets.read(partition);
  const cursor = new StreamCursor<unknown>({
    generation: undefined,
    nextSeq,
    clientHasEvents: false,
    fromOffset: highWatermark,
  });
  return { partition, stream, highWatermark, cursor };
}

/** What a delivery needs beyond where it reads: the stream's end, event ids, callbacks. */
export type DeliveryExtras = Partial<
  Pick<DeliveryOptions, 'eventIds' | 'onEnd' | 'caughtUpAt' | 'terminal' | 'replay' | 'answerAs'>
>;

/**
 * Delivers a stream from the log to an SSE response through this gateway's shared tails. A new
 * stream is caught up at once (`caughtUpAt` = its start); a resumed one when the read reaches
 * the high watermark seen at the decision.
 */
export function deliverStream(
  ctx: GatewayContext,
  sse: SseStream,
  at: { session: PartitionKey; stream: StreamId; partition: number; fromOffset: bigint },
  cursor: StreamCursor<unknown>,
  extras: DeliveryExtras = {},
): void {
  startDelivery({
    ...at,
    logIdentity: ctx.logIdentity,
    keyring: ctx.keyring,
    tails: ctx.tails,
    sse,
    cursor,
    caughtUpAt: at.fromOffset,
    terminal: undefined,
    ...extras,
  });
}

/**
 * The final message of a new request's stream, from its subscription on (made now: before the
 * request is written); the subscription ends with it, or when `res` closes.
 */
export function finalMessage(
  ctx: GatewayContext,
  key: PartitionKey,
  started: NewStream,
  res: Response,
): Promise<unknown> {
  const { partition, stream, cursor, highWatermark } = started;
  return new Promise<unknown>((resolve, reject) => {
    const subscription = ctx.tails.tail(partition).subscribe(highWatermark, {
      onRecords: (records) => {
        for (const record of records) {
          if (record.key !== key) continue;
          const read = readStampedRecord(record);
          if (read === undefined || read.stamp.stream !== stream) continue;
          const step = cursor.accept(read);
          if (step.kind === 'deliver' && step.final) {
            subscription.close();
            resolve(step.record.payload);
          }
        }
      },
      onError: reject,
    });
    res.once('close', () => subscription.close());
  });
}

/**
 * A client that accepts only JSON: subscribe, let `produce` write the request, wait for the final
 * message and answer it as the body. A stateless request's key is internal routing, never shown.
 */
export async function respondJson(
  ctx: GatewayContext,
  res: Response,
  key: PartitionKey,
  started: NewStream,
  produce: () => Promise<void>,
  showSession: boolean,
  /** The id the answer goes out with (a keyed request's own: see `DeliveryOptions.answerAs`). */
  answerAs?: RequestId,
): Promise<void> {
  const final = finalMessage(ctx, key, started, res);
  await produce();
  const payload = await final;
  if (showSession) res.setHeader('Mcp-Session-Id', key);
  res.status(200).json(answeredAs(payload, answerAs) ?? null);
}
