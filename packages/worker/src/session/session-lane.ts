import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { context } from '@opentelemetry/api';
import {
  JsonRpcErrorCodes,
  parseStreamId,
  requestStreamId,
  type LogRecord,
  type RequestId,
  type SessionId,
  type StreamId,
  type PartitionKey,
} from '@tidemark/protocol';
import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME, ATTR_MCP_SESSION_ID } from '@tidemark/otel';
import { whileUnavailable } from '../execution/index.js';
import { Call } from '../calls/index.js';
import type { PartitionReader } from '../calls/index.js';
import { SessionCache } from './session-cache.js';
import { SessionRuntime } from './session-runtime.js';
import { answerFailure, progressReader, type LaneContext } from '../calls/index.js';

type Request = JSONRPCMessage & { id: RequestId; method: string };

/**
 * One record of a session, as it was delivered: where it was read (its partition's reader and its
 * offset), whose it is, what it says, and the call it joins when it is a keyed call passed on.
 */
interface Delivery {
  readonly reader: PartitionReader;
  readonly record: LogRecord;
  readonly session: SessionId;
  readonly message: JSONRPCMessage;
  readonly joins: Joins | undefined;
}

/** The call a keyed request joins (its idempotency key's): see `SessionRuntime.join`. */
export interface Joins {
  /** A session's, or the key's own (a stateless call ran first). */
  readonly session: PartitionKey;
  readonly stream: StreamId;
}

/**
 * The session lane on a worker: each session's MCP server (restored from the log on first sight,
 * dropped when idle), its requests run as calls in slots, each inside the trace the gateway began.
 */
export class SessionLane {
  readonly runtimes: SessionCache;

  constructor(private readonly lane: LaneContext) {
    this.runtimes = new SessionCache(lane.options.maxSessions);
  }

  /**
   * One message of a session. A log that is briefly unavailable (a leader or controller failover)
   * is waited out before the request is answered with an error; nothing of the call has started
   * before these reads.
   */
  async dispatch(
    reader: PartitionReader,
    record: LogRecord,
    session: SessionId,
    message: JSONRPCMessage,
    joins?: Joins,
  ): Promise<void> {
    const delivery: Delivery = { reader, record, session, message, joins };
    await this.answering(delivery, () =>
      whileUnavailable(() => this.handOver(delivery), {
        stopped: () => reader.signal.aborted,
        onRetry: (error) =>
          this.lane.options.onProblem(
            `requests ${reader.partition}@${record.offset}: the log is unavailable; retrying`,
            error,
          ),
      }),
    );
  }

  /** Runs `work` for a request; when it fails, the request is answered with an error. */
  private async answering(
    { reader, record, session, message }: Delivery,
    work: () => Promise<void>,
  ): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (reader.signal.aborted) return; // the next owner runs it
      this.lane.options.onProblem(`requests ${reader.partition}@${record.offset}: failed`, error);
      await answerFailure(this.lane, session, message);
      reader.done(record.offset);
    }
  }

  /** The client ended its session: its running calls are cancelled, its server dropped. */
  async end(session: SessionId): Promise<void> {
    await (await this.runtimes.get(session))?.cancelAll('the session ended');
    await this.runtimes.drop(session);
  }

  /** The partitions went elsewhere: their sessions' servers and calls stop here. */
  async dropPartitions(partitions: readonly number[]): Promise<void> {
    await this.runtimes.dropPartitions(partitions);
  }

  /** Restores the session's server if needed and hands the message over. */
  private async handOver(delivery: Delivery): Promise<void> {
    const { reader, record, session } = delivery;
    let { message } = delivery;
    // The gateway keeps an initialize's params once, in the session's record.
    if ('method' in message && message.method === 'initialize' && !('params' in message)) {
      const stored = (await this.lane.stores.sessions.get(session))?.initialize as
        { params?: unknown } | undefined;
      message = { ...message, params: stored?.params ?? {} } as JSONRPCMessage;
    }
    const runtime = await this.runtimeFor(session, reader, message);
    if (runtime === undefined) {
      this.lane.options.onProblem(
        `requests ${reader.partition}@${record.offset}: session ${session} is unknown or ended; skipped`,
      );
      await answerFailure(this.lane, session, message, {
        code: JsonRpcErrorCodes.sessionNotFound,
        message: 'Session not found: it ended or expired; initialize a new one',
      });
      return reader.done(record.offset);
    }
    if ('method' in message && 'id' in message && message.id !== undefined)
      return this.afterHandoff({ ...delivery, message }, runtime, message);
    await runtime.other(message);
    reader.done(record.offset);
  }

  /**
   * A request whose call another worker may still be finishing (its partition just came here from
   * that worker) waits for it off the partition's read loop — the requests after it go on — and is
   * then skipped as done, or run again when its worker gave it up. Any other starts now.
   */
  private async afterHandoff(
    delivery: Delivery,
    runtime: SessionRuntime,
    request: Request,
  ): Promise<void> {
    const { reader, record } = delivery;
    const { handoffs, stores } = this.lane;
    if (handoffs?.mayPredateAssignment(reader.partition, record.timestampMs) !== true)
      return this.startCall(delivery, runtime, request);
    const stream = requestStreamId(request.id);
    const head = await stores.heads.decided(runtime.session, stream);
    if (!handoffs.mayBeRunningElsewhere(head)) return this.startCall(delivery, runtime, request);
    const stopped = () => reader.signal.aborted || reader.handingOff;
    void this.answering(delivery, async () => {
      const settled = await handoffs.settle(runtime.session, stream, head, stopped);
      if (stopped()) return; // the next owner decides it
      if (settled?.terminal !== undefined) return reader.done(record.offset);
      await this.startCall(delivery, runtime, request);
    });
  }

  /** A request: a call, in the trace the gateway started (from the record headers). */
  private async startCall(
    { reader, record, joins }: Delivery,
    runtime: SessionRuntime,
    request: Request,
  ): Promise<void> {
    const { log, topics } = this.lane.options;
    const call = await Call.take(this.lane, reader, record, request.method, {
      [ATTR_MCP_METHOD_NAME]: request.method,
      [ATTR_MCP_SESSION_ID]: runtime.session,
      [ATTR_JSONRPC_REQUEST_ID]: String(request.id),
    });
    // Being handed off while it waited for a slot: the partition's next owner runs it.
    if (reader.handingOff) return call.finish('stopped');
    try {
      await context.with(call.context, () =>
        joins === undefined
          ? runtime.request(call, request)
          : runtime.join(call, request, joins, {
              log,
              topic: topics.events,
              gone: async () => (await this.lane.stores.sessions.get(joins.session)) === undefined,
            }),
      );
    } catch (error) {
      call.finish('not-started');
      throw error;
    }
  }

  private async runtimeFor(
    session: SessionId,
    reader: PartitionReader,
    message: JSONRPCMessage,
  ): Promise<SessionRuntime | undefined> {
    const existing = await this.runtimes.get(session);
    if (existing !== undefined) return existing;
    const isInitialize = 'method' in message && message.method === 'initialize';
    const { options, stores } = this.lane;
    // The gateway wrote the session's record before its initialize: it names the subject.
    const record = await stores.sessions.get(session);
    const notASession = record?.task !== undefined || record?.idempotency !== undefined;
    if (!isInitialize && (record === undefined || notASession)) return undefined;
    const { partition } = reader;
    const runtime = new SessionRuntime({
      session,
      subject: record?.subject,
      modules: options.modules,
      events: this.lane.events,
      serverInfo: options.serverInfo,
      instructions: options.instructions,
      writer: stores.writer,
      heads: stores.heads,
      steps: stores.steps,
      maxStepBytes: options.maxStepBytes,
      onStep: options.onStep,
      lastProgress: progressReader(this.lane),
      maxConcurrentCalls: options.maxConcurrentCallsPerSession,
      maxExecutionsPerCall: options.maxExecutionsPerCall,
      onExecution: (event) => options.onExecution?.({ session, ...event }),
      onExecutionEnd: options.onExecutionEnd,
      logger: options.logger,
      onWriteFailure: (stream, error) =>
        options.onProblem(
          `the log refused a write of ${session} ${stream}; its result is written again as a new generation`,
          error,
        ),
    });
    await runtime.start(isInitialize ? undefined : record);
    await this.runtimes.add(session, partition, runtime);
    return runtime;
  }
}

/** The call a passed-on keyed request joins, when its stream id is one. */
export function joinsOf(
  joins: { session: PartitionKey; stream: string } | undefined,
): Joins | undefined {
  const stream = joins === undefined ? undefined : parseStreamId(joins.stream);
  return joins === undefined || stream === undefined
    ? undefined
    : { session: joins.session, stream };
}
