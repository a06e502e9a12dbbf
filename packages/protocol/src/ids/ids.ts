import { createHash, randomBytes } from 'node:crypto';

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };
declare const partitionKey: unique symbol;

/**
 * What places records on a partition: the key of everything one owner has in the log (the record
 * key in every topic, and so the partition). Three owners are minted alike and play the same part
 * — a `SessionId`, a `RoutingKey`, a `TaskId` — each a `PartitionKey`, none another: the compiler
 * refuses a routing key where a session is meant. (An event stream's key is one too.)
 */
export type PartitionKey = string & { readonly [partitionKey]: true };
/** A session: 128 random bits, base64url (22 characters). */
export type SessionId = PartitionKey & Brand<string, 'SessionId'>;
/** A 2026-07-28 request's key in the log, in place of a session: one per request (or per idempotency key). */
export type RoutingKey = PartitionKey & Brand<string, 'RoutingKey'>;
/** A task's id: the routing key of the `tools/call` that created it, and its key in the log. */
export type TaskId = PartitionKey & Brand<string, 'TaskId'>;
/** One SSE stream of a session: a request's response stream or the standalone GET stream. */
export type StreamId = Brand<string, 'StreamId'>;
/** Minted once per worker process; never reused. 80 random bits, 20 hex characters. */
export type WorkerEpoch = Brand<string, 'WorkerEpoch'>;

/** A JSON-RPC request id: the key of a request's response stream. */
export type RequestId = string | number;

const SESSION_ID = /^[A-Za-z0-9_-]{22,128}$/;
const WORKER_EPOCH = /^[0-9a-f]{20}$/;
/** Request ids longer than this are hashed into the stream id, keeping event ids compact. */
const MAX_INLINE_STREAM_BYTES = 48;

export const STANDALONE_STREAM = 's' as StreamId;
/** The stream of a task (under its task id's key): its executions, input requests and outcome. */
export const TASK_STREAM = 't' as StreamId;

export function newSessionId(): SessionId {
  return randomBytes(16).toString('base64url') as SessionId;
}

export function newRoutingKey(): RoutingKey {
  return randomBytes(16).toString('base64url') as RoutingKey;
}

/** A key minted onto a partition (`keyOnPartition`), taken as a session's. */
export function asSessionId(key: PartitionKey): SessionId {
  return key as SessionId;
}

/** A key minted onto a partition (`keyOnPartition`), taken as a request's routing key. */
export function asRoutingKey(key: PartitionKey): RoutingKey {
  return key as string as RoutingKey;
}

export function newWorkerEpoch(): WorkerEpoch {
  return randomBytes(10).toString('hex') as WorkerEpoch;
}

/** Validates a session id from outside (a header): 22–128 base64url characters. */
export function parseSessionId(value: string): SessionId | undefined {
  return SESSION_ID.test(value) ? (value as SessionId) : undefined;
}

/** Validates a routing key from outside (a record's key): the form of a session id. */
export function parseRoutingKey(value: string): RoutingKey | undefined {
  return SESSION_ID.test(value) ? (value as RoutingKey) : undefined;
}

/** Validates a task id from outside (a request's params): the form of a session id. */
export function parseTaskId(value: string): TaskId | undefined {
  return SESSION_ID.test(value) ? (value as TaskId) : undefined;
}

/**
 * What is said to a task (an update, a cancel) is routed by its id: a task's id is the routing
 * key of the `tools/call` that created it.
 */
export function routingKeyOfTask(task: TaskId): RoutingKey {
  return task as string as RoutingKey;
}

/** The key of any owner, when what owns it does not matter (placing it, naming its records). */
export function parsePartitionKey(value: string): PartitionKey | undefined {
  return SESSION_ID.test(value) ? (value as PartitionKey) : undefined;
}

export function parseWorkerEpoch(value: string): WorkerEpoch | undefined {
  return WORKER_EPOCH.test(value) ? (value as WorkerEpoch) : undefined;
}

/**
 * The stream id of a request's response stream. Numbers and strings stay distinct (`1` is not
 * `"1"`); ids too long to carry in an event id are replaced by a hash of themselves.
 */
export function requestStreamId(requestId: RequestId): StreamId {
  const inline = typeof requestId === 'number' ? `n${requestId}` : `r${requestId}`;
  if (Buffer.byteLength(inline) <= MAX_INLINE_STREAM_BYTES) return inline as StreamId;
  const digest = createHash('sha256').update(JSON.stringify(requestId)).digest('base64url');
  return `h${digest.slice(0, 27)}` as StreamId;
}

/** Validates a stream id read from a record or an event id. */
export function parseStreamId(value: string): StreamId | undefined {
  if (value === STANDALONE_STREAM) return STANDALONE_STREAM;
  if (value === TASK_STREAM) return TASK_STREAM;
  if (Buffer.byteLength(value) > MAX_INLINE_STREAM_BYTES) return undefined;
  if (/^n-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value)) return value as StreamId;
  if (value.startsWith('r') || /^h[A-Za-z0-9_-]{27}$/.test(value)) return value as StreamId;
  return undefined;
}
