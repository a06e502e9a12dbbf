import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { setTimeout as sleep } from 'node:timers/promises';
import { finalMessage, type IdempotencyClaim, type SessionRecord } from '@tidemark/log';
import {
  callFingerprint,
  idempotencyKeyGone,
  idempotencyKeyReused,
  requestStreamId,
  STATELESS_PROTOCOL_VERSION,
  streamHeadKey,
  type LogRecord,
  type RequestId,
  type RequestRecord,
  type RoutingKey,
} from '@tidemark/protocol';
import type { PartitionReader } from '../calls/index.js';
import type { StatelessExchange } from './stateless-exchange.js';
import { whileUnavailable } from '../execution/index.js';
import { answerRequest, JOIN_FAILED, type LaneContext } from '../calls/index.js';

type KeyedRequest = JSONRPCMessage & { id: RequestId; method: string; params?: unknown };

/** A joined session call without a head: its session is asked whether it is gone every second. */
const GONE_CHECK_POLLS = 10;

/**
 * A keyed request to run: its claim, and the key's record as read to decide it (null: there was
 * none; undefined: not read, the execution running here decided).
 */
export type Decided = IdempotencyClaim & { readonly record: SessionRecord | null | undefined };

/**
 * Keyed `tools/call` requests of the stateless lane (an idempotency key). Every request with one
 * key reaches the worker that owns the key's routing key, in log order, so the decision needs no
 * lock: the first request is the execution and claims the key (a record in `sessions` naming its
 * stream); a later one with the same tool and arguments is answered with the execution's own
 * final message once there is one (for a task: the same task), one with other arguments is
 * refused. A claimed execution that neither runs nor finished (its worker died after the key's
 * records moved on) runs again in the later request's stream, journaling into the first one's
 * steps, so its effects still happen once.
 */
export class IdempotentCalls {
  constructor(private readonly lane: LaneContext) {}

  /**
   * What becomes of a keyed request: the claim to run it under, or `answered` when it was taken
   * care of here (joined, refused, or the running execution's own request again).
   */
  async decide(
    reader: PartitionReader,
    offset: bigint,
    key: RoutingKey,
    message: KeyedRequest,
    running: StatelessExchange | undefined,
  ): Promise<Decided | 'answered'> {
    const stream = requestStreamId(message.id);
    const fingerprint = callFingerprint(message.params);
    // The record read here is the one the exchange would read next: it is passed on.
    const record =
      running === undefined ? ((await this.lane.stores.sessions.get(key)) ?? null) : undefined;
    const claim = running?.claim ?? record?.idempotency;
    if (claim === undefined) return { fingerprint, stream, journal: stream, record };
    const tool = (message.params as { name?: unknown } | undefined)?.name;
    if (claim.fingerprint !== fingerprint) {
      await answerRequest(this.lane, key, message, { error: idempotencyKeyReused(tool) });
      return this.answered(reader, offset, key, message);
    }
    // The execution's own request, delivered again: run or skipped as any redelivered request.
    // (Every keyed request has a stream of its own: the gateway gives it an id of its own.)
    if (claim.session === undefined && claim.stream === stream) return { ...claim, record };
    if (running === undefined && claim.session === undefined) {
      const head = await this.lane.stores.heads.decided(key, claim.stream);
      if (head?.terminal === undefined) return { ...claim, stream, record };
    }
    void this.join(reader, offset, key, message, claim, running);
    return 'answered';
  }

  /** Answers a later request with the execution's final message, once it has one. */
  private async join(
    reader: PartitionReader,
    offset: bigint,
    key: RoutingKey,
    message: KeyedRequest,
    claim: IdempotencyClaim,
    running: StatelessExchange | undefined,
  ): Promise<void> {
    try {
      await running?.answered;
      if (reader.signal.aborted) return; // the next owner answers it
      // A session's keyed call answers in its session's stream: its final message is waited for.
      const head = await this.finalOf(claim, key, reader.signal);
      const outcome =
        head === 'gone' || head?.terminal === undefined
          ? undefined
          : await finalMessage(
              this.lane.options.log,
              this.lane.options.topics.events,
              this.lane.stores.heads.partitionOf(key),
              key,
              head.terminal,
            );
      if (head === 'gone') {
        await answerRequest(this.lane, key, message, { error: idempotencyKeyGone() });
      } else if (outcome === undefined) {
        if (reader.signal.aborted) return;
        throw new Error(`the execution of ${streamHeadKey(key, claim.stream)} ended unanswered`);
      } else {
        const { jsonrpc: _jsonrpc, id: _id, ...answer } = outcome as Record<string, unknown>;
        await answerRequest(this.lane, key, message, answer);
      }
    } catch (error) {
      this.lane.options.onProblem(`joining ${key} to its execution`, error);
      await answerRequest(this.lane, key, message, { error: JOIN_FAILED });
    }
    this.answered(reader, offset, key, message);
  }

  /**
   * A session's keyed call, on the worker that owns its key: the first request with the key claims
   * it and is passed on to its session's partition to run there; a later one with the same tool and
   * arguments is passed on to join that call's stream; one with others is refused. Nothing is
   * marked done here before what it leads to is in the log.
   */
  async forSession(
    reader: PartitionReader,
    record: LogRecord,
    keyed: Extract<RequestRecord, { lane: 'keyed-session' }>,
    running: StatelessExchange | undefined,
  ): Promise<void> {
    const { key, session, subject } = keyed;
    const message = keyed.message as unknown as KeyedRequest;
    const stream = requestStreamId(message.id);
    const fingerprint = callFingerprint(message.params);
    const claim = running?.claim ?? (await this.lane.stores.sessions.get(key))?.idempotency;
    const own = claim === undefined || (claim.session === session && claim.stream === stream);
    if (claim !== undefined && claim.fingerprint !== fingerprint) {
      const tool = (message.params as { name?: unknown } | undefined)?.name;
      await answerRequest(this.lane, session, message, { error: idempotencyKeyReused(tool) });
    } else {
      if (claim === undefined)
        await writeClaim(this.lane, key, subject, {
          fingerprint,
          session,
          stream,
          journal: stream,
        });
      const joins =
        own || claim === undefined
          ? undefined
          : { session: claim.session ?? key, stream: claim.stream };
      await passOn(this.lane, record, {
        lane: 'session',
        session,
        message: keyed.message,
        joins,
        share: keyed.share,
        caller: keyed.caller,
      });
    }
    reader.done(record.offset);
  }

  /**
   * The head of a joined call once it has its final message (polled; none when stopped) — or
   * `gone` once a session's call has no head and its session is gone (ended or expired with its
   * heads): nothing would ever finish it, and the joiner is answered an error instead of waiting
   * forever with its offset held (security review M6).
   */
  private async finalOf(claim: IdempotencyClaim, key: RoutingKey, signal: AbortSignal) {
    const session = claim.session ?? key;
    for (let polls = 1; ; polls++) {
      const head = await this.lane.stores.heads.decided(session, claim.stream);
      if (head?.terminal !== undefined || signal.aborted) return head;
      if (head === undefined && claim.session !== undefined && polls % GONE_CHECK_POLLS === 0)
        if ((await this.lane.stores.sessions.get(claim.session)) === undefined) return 'gone';
      await sleep(100);
    }
  }

  private answered(
    reader: PartitionReader,
    offset: bigint,
    key: RoutingKey,
    message: KeyedRequest,
  ): 'answered' {
    // A later request's stream is an answer only: it goes at its commit, as a stateless one does.
    reader.forgetOnCommit(offset, streamHeadKey(key, requestStreamId(message.id)));
    reader.done(offset);
    return 'answered';
  }
}

/** Claims a key: a record under its routing key, naming the call it belongs to. */
async function writeClaim(
  lane: LaneContext,
  key: RoutingKey,
  subject: string | undefined,
  claim: IdempotencyClaim,
): Promise<void> {
  const record: SessionRecord = {
    id: key,
    protocolVersion: STATELESS_PROTOCOL_VERSION,
    initialize: null,
    ...(subject === undefined ? {} : { subject }),
    createdAtMs: Date.now(),
    idempotency: claim,
  };
  await whileUnavailable(() => lane.stores.sessions.create(record), {
    stopped: () => false,
    onRetry: () => undefined,
  });
}

/**
 * Writes a keyed session request on to its session's partition, in the trace it came with — sealed
 * like a gateway's, when this worker holds the gateways' keyring (it came to us sealed).
 */
async function passOn(
  lane: LaneContext,
  from: LogRecord,
  record: Extract<RequestRecord, { lane: 'session' }>,
): Promise<void> {
  const trace = from.headers.filter(([name]) => !name.startsWith('tm-'));
  await whileUnavailable(() => lane.stores.requests.write(record.session, [record], trace), {
    stopped: () => false,
    onRetry: () => undefined,
  });
}
