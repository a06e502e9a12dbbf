import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/server';
import {
  JsonRpcErrorCodes,
  parseStreamId,
  type Caller,
  type LogRecord,
  type PartitionKey,
  type SessionId,
} from '@tidemark/protocol';
import { answerFailure, type LaneContext, type PartitionReader } from '../calls/index.js';
import { answerFailed, type Delivery, type Joins } from './delivery.js';
import { SessionCache } from './session-cache.js';
import { SessionRuntime } from './session-runtime.js';

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
   * One message of a session, handed to its session's runtime (restored first if needed). Whatever
   * fails on the way is answered with an error.
   */
  async dispatch(
    reader: PartitionReader,
    record: LogRecord,
    session: SessionId,
    message: JSONRPCMessage,
    {
      joins,
      caller,
    }: {
      joins?: { session: PartitionKey; stream: string } | undefined;
      caller?: Caller | undefined;
    } = {},
  ): Promise<void> {
    const delivery: Delivery = { reader, record, session, message, joins: joinsOf(joins), caller };
    try {
      await this.handOver(delivery);
    } catch (error) {
      await answerFailed(this.lane, delivery, error);
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
      const stored = (
        await reader.whileUnavailable(record.offset, () => this.lane.stores.sessions.get(session))
      )?.initialize as { params?: unknown } | undefined;
      message = { ...message, params: stored?.params ?? {} } as JSONRPCMessage;
    }
    const runtime = await this.runtimeFor(delivery, message);
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
    // A request goes to its session's runtime, which decides it and runs it: the lane is done.
    if (isJSONRPCRequest(message)) return runtime.deliver({ ...delivery, message });
    // One the SDK would not take (it would drop it without an answer) is answered here.
    if ('method' in message && 'id' in message) {
      await answerFailure(this.lane, session, message, {
        code: JsonRpcErrorCodes.invalidRequest,
        message: 'Invalid Request: not a JSON-RPC 2.0 request',
      });
      return reader.done(record.offset);
    }
    await runtime.other(message);
    reader.done(record.offset);
  }

  private async runtimeFor(
    delivery: Delivery,
    message: JSONRPCMessage,
  ): Promise<SessionRuntime | undefined> {
    const { reader, record: at, session } = delivery;
    const existing = await this.runtimes.get(session);
    if (existing !== undefined) return existing;
    const isInitialize = 'method' in message && message.method === 'initialize';
    const { options, stores } = this.lane;
    // The gateway wrote the session's record before its initialize: it names the subject.
    const stored = await reader.whileUnavailable(at.offset, () => stores.sessions.get(session));
    const notASession = stored?.task !== undefined || stored?.idempotency !== undefined;
    if (!isInitialize && (stored === undefined || notASession)) return undefined;
    const { partition } = reader;
    const runtime = new SessionRuntime(this.lane, {
      session,
      subject: stored?.subject,
      maxConcurrentCalls: options.maxConcurrentCallsPerSession,
    });
    await runtime.start(isInitialize ? undefined : stored);
    await this.runtimes.add(session, partition, runtime);
    return runtime;
  }
}

/** The call a passed-on keyed request joins, when its stream id is one. */
function joinsOf(joins: { session: PartitionKey; stream: string } | undefined): Joins | undefined {
  const stream = joins === undefined ? undefined : parseStreamId(joins.stream);
  return joins === undefined || stream === undefined
    ? undefined
    : { session: joins.session, stream };
}
