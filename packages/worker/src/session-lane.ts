import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { context } from '@opentelemetry/api';
import {
  JsonRpcErrorCodes,
  parseStreamId,
  type LogRecord,
  type RequestId,
  type SessionId,
  type StreamId,
} from '@tidemark/protocol';
import { ATTR_JSONRPC_REQUEST_ID, ATTR_MCP_METHOD_NAME, ATTR_MCP_SESSION_ID } from '@tidemark/otel';
import { whileUnavailable } from './backoff.js';
import { Call } from './call.js';
import type { PartitionReader } from './partition-reader.js';
import { SessionCache } from './session-cache.js';
import { SessionRuntime } from './session-runtime.js';
import { answerFailure, progressReader, type LaneContext } from './lane-context.js';

type Request = JSONRPCMessage & { id: RequestId; method: string };

/** The call a keyed request joins (its idempotency key's): see `SessionRuntime.join`. */
export interface Joins {
  readonly session: SessionId;
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
    const at = `requests ${reader.partition}@${record.offset}`;
    const stopped = () => reader.signal.aborted;
    try {
      await whileUnavailable(() => this.handOver(reader, record, session, message, joins), {
        stopped,
        onRetry: (error) =>
          this.lane.options.onProblem(`${at}: the log is unavailable; retrying`, error),
      });
    } catch (error) {
      if (stopped()) return; // the next owner runs it
      this.lane.options.onProblem(`${at}: failed`, error);
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
  private async handOver(
    reader: PartitionReader,
    record: LogRecord,
    session: SessionId,
    message: JSONRPCMessage,
    joins: Joins | undefined,
  ): Promise<void> {
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
      return this.startCall(reader, record, runtime, message, joins);
    await runtime.other(message);
    reader.done(record.offset);
  }

  /** A request: a call, in the trace the gateway started (from the record headers). */
  private async startCall(
    reader: PartitionReader,
    record: LogRecord,
    runtime: SessionRuntime,
    request: Request,
    joins: Joins | undefined,
  ): Promise<void> {
    const { log, topics } = this.lane.options;
    const call = await Call.take(this.lane, reader, record, request.method, {
      [ATTR_MCP_METHOD_NAME]: request.method,
      [ATTR_MCP_SESSION_ID]: runtime.session,
      [ATTR_JSONRPC_REQUEST_ID]: String(request.id),
    });
    try {
      await context.with(call.context, () =>
        joins === undefined
          ? runtime.request(call, request)
          : runtime.join(call, request, joins, { log, topic: topics.events }),
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
  joins: { session: SessionId; stream: string } | undefined,
): Joins | undefined {
  const stream = joins === undefined ? undefined : parseStreamId(joins.stream);
  return joins === undefined || stream === undefined
    ? undefined
    : { session: joins.session, stream };
}
