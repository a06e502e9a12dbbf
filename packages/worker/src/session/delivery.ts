import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import {
  type Caller,
  type LogRecord,
  type PartitionKey,
  type RequestId,
  type SessionId,
  type StreamId,
} from '@tidemark/protocol';
import { answerFailure, type LaneContext, type PartitionReader } from '../calls/index.js';

/**
 * One record of a session, as it was delivered: where it was read (its partition's reader and its
 * offset), whose it is, what it says, and the call it joins when it is a keyed call passed on.
 */
export interface Delivery {
  readonly reader: PartitionReader;
  readonly record: LogRecord;
  readonly session: SessionId;
  readonly message: JSONRPCMessage;
  readonly joins: Joins | undefined;
  /** What the request's credential said beside the session's subject (OAuth client, scopes). */
  readonly caller?: Caller | undefined;
}

/** A JSON-RPC request of a session. */
export type Request = JSONRPCMessage & { id: RequestId; method: string };

/** A delivered request: what the lane hands its session's runtime, once. */
export type RequestDelivery = Delivery & { readonly message: Request };

/** The call a keyed request joins (its idempotency key's): see `SessionRuntime.deliver`. */
export interface Joins {
  /** A session's, or the key's own (a stateless call ran first). */
  readonly session: PartitionKey;
  readonly stream: StreamId;
}

/**
 * Answers a delivered request with an error after what it started failed (every request a worker
 * takes is answered) — unless the partition went elsewhere: its next owner runs it.
 */
export async function answerFailed(
  lane: LaneContext,
  { reader, record, session, message }: Delivery,
  error: unknown,
): Promise<void> {
  if (reader.signal.aborted) return; // the next owner runs it
  lane.options.onProblem(`requests ${reader.partition}@${record.offset}: failed`, error);
  await answerFailure(lane, session, message);
  reader.done(record.offset);
}
