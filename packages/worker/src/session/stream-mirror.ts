import { setTimeout as sleep } from 'node:timers/promises';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { finalMessage, type StreamHeadStore } from '@tidemark/log';
import {
  ErrorCodes,
  idempotencyKeyGone,
  isTidemarkError,
  readStampedRecord,
  StreamCursor,
  type LogPort,
  type PartitionKey,
  type RequestId,
  type StreamId,
} from '@tidemark/protocol';
import { JOIN_FAILED, type LaneContext } from '../calls/index.js';
import type { CallExecution } from '../execution/index.js';
import type { Joins } from './delivery.js';

/** What a mirror is told, in order: a reset (the joined call runs again), a message, the end. */
interface MirrorSink {
  /** The joined call started again (a new generation): the mirror's client is reset too. */
  reset(): Promise<void>;
  message(payload: unknown): Promise<void>;
  final(payload: unknown): Promise<void>;
  /** True once the mirror is no longer wanted (cancelled, its session dropped). */
  stopped(): boolean;
}

interface MirrorSource {
  readonly log: LogPort;
  readonly topic: string;
  readonly heads: StreamHeadStore;
  readonly session: PartitionKey;
  readonly stream: StreamId;
  /**
   * Whether the joined call's session is gone (ended, or expired): asked while the call has no
   * head, so a claim whose call will never start is not waited for forever.
   */
  readonly gone?: () => Promise<boolean>;
}

/** The request that joins a call: its own execution (its stream), its id and token, its end. */
export interface Joiner {
  readonly run: Pick<CallExecution, 'send' | 'retry'>;
  readonly requestId: RequestId;
  /** The joiner's own progress token (none asked: no progress). */
  readonly progressToken: unknown;
  /** True once the joiner ended (cancelled, its session dropped). */
  closed(): boolean;
  finish(message: JSONRPCMessage): Promise<void>;
}

/**
 * Follows the joined call into the joiner's stream, in the background (`mirrorStream`): its
 * messages, a reset when it runs again, and its final message under the joiner's id — or an error
 * when it cannot be followed (its session gone with it: the key's error).
 */
export function followJoined(lane: LaneContext, joins: Joins, joiner: Joiner): void {
  const { requestId: id } = joiner;
  const { options, stores, environment } = lane;
  const source: MirrorSource = {
    log: options.log,
    topic: options.topics.events,
    heads: environment.heads,
    gone: async () => (await stores.sessions.get(joins.session)) === undefined,
    ...joins,
  };
  void mirrorStream(source, {
    stopped: () => joiner.closed(),
    reset: () => joiner.run.retry(),
    message: async (payload) => {
      const forwarded = joinedMessage(payload, joiner.progressToken);
      if (forwarded !== undefined) await joiner.run.send(forwarded);
    },
    final: (payload) => joiner.finish({ ...(payload as object), id } as JSONRPCMessage),
  }).catch(async (error: unknown) => {
    const failed = error instanceof JoinedCallGone ? idempotencyKeyGone() : JOIN_FAILED;
    if (!joiner.closed()) await joiner.finish({ jsonrpc: '2.0', id, error: failed });
  });
}

/** The joined call went with its session before it had an outcome: nothing will ever finish it. */
class JoinedCallGone extends Error {}

/** While a joined call has no head, how often its session is asked whether it is gone. */
const GONE_CHECK_MS = 1_000;

/**
 * Follows another call's stream in `events` — from its current generation's start, through its
 * later generations, to its final message — and hands what it finds to `sink`: how a request that
 * joins a call with the same idempotency key gets that call's stream from the start, without
 * running the tool. Read with the delivery rules (`StreamCursor`): superseded records are dropped,
 * a new generation is a reset. A call already finished is its final message.
 */
async function mirrorStream(source: MirrorSource, sink: MirrorSink): Promise<void> {
  const { heads, session, stream } = source;
  const head = await startedHead(source, sink);
  if (head === undefined) return;
  const partition = heads.partitionOf(session);
  if (head.terminal !== undefined)
    return sink.final(
      await finalMessage(source.log, source.topic, partition, session, head.terminal),
    );
  const cursor = new StreamCursor<unknown>({
    generation: undefined,
    nextSeq: undefined,
    clientHasEvents: false,
    fromOffset: head.startOffset,
  });
  let offset = head.startOffset;
  let sent = false;
  while (!sink.stopped()) {
    const fetched = await fetchOrEvicted(source, partition, offset);
    if (fetched.kind === 'evicted') {
      // Its events expired under the mirror: what is left of the call is its head.
      if (fetched.final !== undefined) return sink.final(fetched.final);
      offset = fetched.logStartOffset;
      continue;
    }
    for (const record of fetched.records) {
      const read = record.key === session ? readStampedRecord(record) : undefined;
      if (read === undefined || read.stamp.stream !== stream) continue;
      const step = cursor.accept(read);
      if (step.kind === 'skip') continue;
      if ((step.kind === 'reset-only' || step.resetBefore !== undefined) && sent) {
        await sink.reset();
        sent = false;
      }
      if (step.kind !== 'deliver' || step.record.payload === undefined) continue;
      if (step.final) return sink.final(step.record.payload);
      await sink.message(step.record.payload);
      sent = true;
    }
    offset = fetched.nextOffset;
  }
}

/**
 * The joined call's head once its worker started it — it may not have yet — or undefined when the
 * mirror stopped. Its session ended with its heads (DELETE, expiry) and nothing will ever start it:
 * `JoinedCallGone` (security review M6).
 */
async function startedHead(source: MirrorSource, sink: MirrorSink) {
  const { heads, session, stream } = source;
  let head = await heads.get(session, stream);
  for (let checkedAt = Date.now(); head === undefined;) {
    if (sink.stopped()) return undefined;
    if (Date.now() - checkedAt >= GONE_CHECK_MS) {
      if ((await source.gone?.()) === true)
        throw new JoinedCallGone(`the joined call ${session}/${stream} is gone with its session`);
      checkedAt = Date.now();
    }
    await sleep(100);
    head = await heads.get(session, stream);
  }
  return head;
}

/** One read of the joined stream's partition, or, when it was evicted, what its head keeps. */
async function fetchOrEvicted(source: MirrorSource, partition: number, offset: bigint) {
  const { log, topic, heads, session, stream } = source;
  try {
    return {
      kind: 'fetched' as const,
      ...(await log.fetch(topic, partition, offset, { maxWaitMs: 500 })),
    };
  } catch (error) {
    if (!isTidemarkError(error) || error.code !== ErrorCodes.offsetOutOfRange) throw error;
    const kept = await heads.get(session, stream);
    const { logStartOffset } = await log.offsets(topic, partition);
    return { kind: 'evicted' as const, final: kept?.terminal?.payload, logStartOffset };
  }
}

/**
 * What a joined call's message is to the request that joined it: its progress under the joiner's
 * token (none asked: no progress), its notifications as they are; its requests to the client (an
 * elicitation) are its own client's to answer.
 */
function joinedMessage(payload: unknown, token: unknown): unknown {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const message = payload as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
  if (message.id !== undefined) return undefined;
  if (message.method !== 'notifications/progress') return payload;
  if (token === undefined) return undefined;
  return { ...message, params: { ...message.params, progressToken: token } };
}
