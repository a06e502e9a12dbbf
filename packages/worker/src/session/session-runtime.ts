import { context } from '@opentelemetry/api';
import {
  type JSONRPCMessage,
  type AuthInfo,
  type McpServer,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import type { SessionRecord } from '@tidemark/log';
import {
  requestStreamId,
  type RequestId,
  type SessionId,
  type StreamHead,
  type StreamId,
} from '@tidemark/protocol';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  withTraceMeta,
} from '@tidemark/otel';
import type { Execution, ToolLogger } from '@tidemark/tools';
import { Call, type LaneContext } from '../calls/index.js';
import { attachEventMethods, type EmitterFor } from '../events/index.js';
import {
  authInfoOf,
  CallExecution,
  createToolServer,
  decideRun,
  registerModule,
  SESSION_SERVER_VERSIONS,
  type CallEnd,
  type CallEnvironment,
  type ExecutionEnd,
  type RunLimits,
} from '../execution/index.js';
import { answerFailed, type Joins, type Request, type RequestDelivery } from './delivery.js';
import { LogTransport, replayInitialize } from './log-transport.js';
import type { SessionRuntimeOptions } from './session-options.js';
import { StandaloneStream } from './standalone-stream.js';
import { followJoined } from './stream-mirror.js';
import { InFlight, isResponse, relatedStream } from './in-flight.js';

export type { SessionRuntimeOptions } from './session-options.js';

/**
 * One session on this worker: the SDK's `McpServer` with the session's tool modules, connected to
 * a transport that writes everything the server sends to the log, stamped with the generation of
 * the stream it belongs to.
 */
export class SessionRuntime {
  readonly session: SessionId;
  readonly authInfo: AuthInfo | undefined;
  private readonly server: McpServer;
  private readonly transport: LogTransport;
  private readonly inflight = new Map<StreamId, InFlight>();
  /** Calls their client cancelled (their streams ended), until their tools give up. */
  private readonly cancelled = new Map<StreamId, InFlight>();
  /** Streams whose request is between its delivery and `inflight` (see `deliver`). */
  private readonly starting = new Set<StreamId>();
  private readonly standalone: StandaloneStream;
  private lastActivityMs = Date.now();
  private closed = false;
  /** The client ended the session (DELETE, or it expired): its calls are cancelled, not moved. */
  private ended = false;
  private readonly environment: CallEnvironment;
  private readonly limits: RunLimits;

  constructor(
    private readonly lane: LaneContext,
    private readonly options: SessionRuntimeOptions,
  ) {
    const environment = (this.environment = lane.environment);
    this.session = options.session;
    this.limits = {
      maxExecutionsPerCall: environment.maxExecutionsPerCall,
      maxConcurrentCalls: options.maxConcurrentCalls,
    };
    this.server = createToolServer(environment, environment.modules, {
      supportedProtocolVersions: [...SESSION_SERVER_VERSIONS],
    });
    this.authInfo = authInfoOf(options.subject);
    this.transport = new LogTransport(this);
    this.standalone = new StandaloneStream(environment, this.session);
  }

  get idleSinceMs(): number {
    return this.inflight.size > 0 ? Date.now() : this.lastActivityMs;
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Registers the modules and connects; replays the stored initialize when the session is restored. */
  async start(restoreFrom: SessionRecord | undefined): Promise<void> {
    for (const module of this.environment.modules) {
      await registerModule(this.server, module, this, { sessionId: this.session });
    }
    attachEventMethods(this.server, this.environment.events);
    await this.server.connect(this.transport);
    if (restoreFrom !== undefined) await replayInitialize(this.transport, restoreFrom);
  }

  /**
   * A request of this session read from its partition, handed here once and decided here: from its
   * stream's head as the log settles it (one read), it is skipped (done, or this process runs it
   * already), refused, joined to the call it names, or run. A request whose call the partition's
   * previous owner may still be finishing waits for that off the read loop: the requests after it
   * go on.
   */
  async deliver(delivery: RequestDelivery): Promise<void> {
    const { reader, record, message } = delivery;
    this.lastActivityMs = Date.now();
    const stream = requestStreamId(message.id);
    // Delivered twice (redelivered, or a keyed request passed on again) while its first copy
    // starts or runs here: only the first may run.
    if (this.inflight.has(stream) || this.starting.has(stream)) return reader.done(record.offset);
    this.starting.add(stream);
    let settling = false;
    try {
      const head = await reader.whileUnavailable(record.offset, () =>
        this.environment.heads.decided(this.session, stream),
      );
      const { handoffs } = this.lane;
      if (
        handoffs?.mayPredateAssignment(reader.partition, record.timestampMs) === true &&
        handoffs.mayBeRunningElsewhere(head)
      ) {
        settling = true;
        const stopped = () => reader.signal.aborted || reader.handingOff;
        void (async () => {
          try {
            const settled = await handoffs.settle(this.session, stream, head, stopped);
            if (!stopped()) await this.run(delivery, stream, settled); // else the next owner decides
          } catch (error) {
            await answerFailed(this.lane, delivery, error);
          } finally {
            this.starting.delete(stream);
          }
        })();
        return;
      }
      await this.run(delivery, stream, head);
    } finally {
      if (!settling) this.starting.delete(stream);
    }
  }

  /**
   * Runs a request as a call: decided from its stream's settled head, in a slot, in the trace the
   * gateway started (from the record headers), as the next generation of its stream.
   */
  private async run(
    { reader, record, message, joins, caller }: RequestDelivery,
    stream: StreamId,
    head: StreamHead | undefined,
  ): Promise<void> {
    // The other calls of the session running or starting here (this one is among the starting).
    const inFlight = this.inflight.size + this.starting.size - 1;
    const verdict = decideRun(head, this.limits, inFlight);
    // Redelivered after it finished (a crash before the commit): never run a call twice.
    if (verdict.kind === 'done') return reader.done(record.offset);
    const call = await Call.take(this.lane, reader, record, message.method, {
      [ATTR_MCP_METHOD_NAME]: message.method,
      [ATTR_MCP_SESSION_ID]: this.session,
      [ATTR_JSONRPC_REQUEST_ID]: String(message.id),
    });
    // Being handed off while it waited for a slot: the partition's next owner runs it.
    if (reader.handingOff) return call.finish('stopped');
    try {
      await context.with(call.context, async () => {
        // Waits while the log is unavailable; a call it refuses for longer than reading its
        // partition waits is answered with an error by the lane.
        const run = await CallExecution.begin(
          this.environment,
          { owner: this.session, stream, subject: this.options.subject, caller },
          head,
          { stopped: () => this.closed },
        );
        const entry = new InFlight(stream, call, run, message);
        // Without the scopes its tool needs, nothing: not even the outcome of a call it joins.
        const unscoped = await this.transport.scopeRefusal(message, run.authInfo);
        // A join runs nothing here: it follows the call it joins, whatever the bounds.
        if (joins !== undefined && unscoped === undefined) return this.join(entry, message, joins);
        const error = unscoped ?? (verdict.kind === 'refuse' ? verdict.error : undefined);
        if (error !== undefined)
          return await run.refuse(message, error).then(() => call.finish('answered'));
        run.reportStart();
        this.inflight.set(stream, entry);
        this.transport.receive(message, run.authInfo);
      });
    } catch (error) {
      call.finish('not-started');
      throw error;
    }
  }

  /**
   * A request that joins another call with the same idempotency key (`joins`): its stream carries
   * that call's messages — progress under this request's own token — and ends with its final
   * message, under this request's id; the tool does not run again. A new execution of the joined
   * call resets this stream too. Cancelled, it ends as any call does.
   */
  private join(entry: InFlight, message: Request, joins: Joins): void {
    const { stream } = entry;
    this.inflight.set(stream, entry);
    followJoined(this.lane, joins, {
      run: entry.run,
      requestId: message.id,
      progressToken: (message as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta
        ?.progressToken,
      closed: () => entry.closed,
      finish: (final) => this.finish(stream, final),
    });
  }

  /** A notification or a response from the client. Cancellation ends the stream at once. */
  async other(message: JSONRPCMessage): Promise<void> {
    this.lastActivityMs = Date.now();
    if ('method' in message && message.method === 'notifications/cancelled') {
      const params = (message as { params?: { requestId?: RequestId } }).params;
      if (params?.requestId !== undefined)
        await this.finish(requestStreamId(params.requestId), undefined);
    }
    this.transport.receive(message);
  }

  /** Cancels every running call, as if the client had cancelled each: their streams end. */
  async cancelAll(reason: string): Promise<void> {
    this.ended = true;
    for (const { request } of [...this.inflight.values()]) {
      await this.other({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: request.id, reason },
      });
    }
  }

  /**
   * Stops every execution of this session (partition revoked, worker stopping, the server dropped).
   * Their streams stay unfinished, so the next owner runs them again.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.inflight.values()) {
      entry.close();
      entry.call.finish('stopped');
    }
    this.inflight.clear();
    this.cancelled.clear();
    await this.server.close();
  }

  /** Where the SDK's outbound messages go. */
  async route(message: JSONRPCMessage, options: TransportSendOptions | undefined): Promise<void> {
    if (this.closed) return;
    if (isResponse(message)) {
      const stream = requestStreamId(message.id);
      const entry = this.inflight.get(stream);
      const wakeAtMs = entry?.run.takeWake();
      // Asleep (`ex.sleep`): what it answered is not the call's; it runs again on time.
      if (entry !== undefined && wakeAtMs !== undefined)
        return entry.rest(wakeAtMs, (request) =>
          this.transport.receive(request, entry.run.authInfo),
        );
      await this.finish(stream, message);
      return;
    }
    // A request to the client (an elicitation, a sampling) carries the tool's trace in `_meta`.
    if ('id' in message) message = withTraceMeta(message);
    const related = relatedStream(this.session, options);
    if (related !== undefined) {
      const entry = this.inflight.get(related);
      // Nothing of a finished or cancelled request goes out after its end.
      if (entry === undefined || entry.closed) return;
      await entry.run.pipeline(message);
      return;
    }
    await this.standalone.send(message);
  }

  /** @internal The execution a tool callback runs in. */
  execution(requestId: RequestId): Execution | undefined {
    return this.inflight.get(requestStreamId(requestId))?.run.toolExecution();
  }

  /** Tells the client its tools changed (`notifications/tools/list_changed`, on its standalone stream). */
  async toolsChanged(): Promise<void> {
    if (this.closed) return;
    await this.server.server.sendToolListChanged();
  }

  /** @internal What tools emit event occurrences with, for a call's subject. */
  get emitAs(): EmitterFor | undefined {
    return this.environment.events?.emitAs;
  }

  /** @internal The logger tools get. */
  get logger(): ToolLogger | undefined {
    return this.environment.logger;
  }

  /** @internal The call ended for good: its audit record, before its answer. */
  audit(requestId: RequestId, end: CallEnd): Promise<void> {
    const stream = requestStreamId(requestId);
    const entry = this.inflight.get(stream) ?? this.cancelled.get(stream);
    this.cancelled.delete(stream);
    return entry?.run.audit(end) ?? Promise.resolve();
  }

  /** @internal Each tool execution's end, for the operator's log. */
  onExecutionEnd(end: ExecutionEnd): void {
    this.environment.onExecutionEnd?.(end);
  }

  /**
   * @internal This process stopped serving the session's calls (its partition moved, the worker
   * stops) — not when the client ended the session: its calls were cancelled.
   */
  stopped(): boolean {
    return this.closed && !this.ended;
  }

  /** @internal A retryable failure: the call runs again as a new generation of its stream. */
  async retry(requestId: RequestId): Promise<void> {
    const entry = this.inflight.get(requestStreamId(requestId));
    if (entry !== undefined && !entry.closed) await entry.run.retry();
  }

  /**
   * Ends a call's stream with its final message, written again while the log refuses it (see
   * `CallExecution.finish`). The call stays in flight meanwhile, so closing the session (partition
   * revoked) still accounts for it.
   */
  private async finish(stream: StreamId, message: JSONRPCMessage | undefined): Promise<void> {
    const entry = this.inflight.get(stream);
    if (entry === undefined || entry.closed) return;
    entry.close();
    // Stopped first (close() ended the call already): the next owner runs the call again.
    if (!(await entry.run.finish(message, () => this.closed)) || this.closed) return;
    this.inflight.delete(stream);
    // Cancelled (no final message): its audit record is written once its tool gives up.
    if (message === undefined) this.cancelled.set(stream, entry);
    entry.call.finish('answered');
  }
}
