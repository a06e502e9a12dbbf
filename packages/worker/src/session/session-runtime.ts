import {
  type JSONRPCMessage,
  type AuthInfo,
  type McpServer,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import type { GenerationWriter, SessionRecord } from '@tidemark/log';
import {
  formatGeneration,
  idempotencyKeyGone,
  requestStreamId,
  STANDALONE_STREAM,
  type RequestId,
  type SessionId,
  type StreamId,
} from '@tidemark/protocol';
import { withTraceMeta } from '@tidemark/otel';
import { backoff } from '../execution/index.js';
import type { Call } from '../calls/index.js';
import { currentExecution, type Execution, type ToolLogger } from '@tidemark/tools';
import { LogTransport, replayInitialize } from './log-transport.js';
import { authInfoOf, createToolServer, SESSION_SERVER_VERSIONS } from '../execution/index.js';
import { attachEventMethods } from '../events/index.js';
import { registerModule, type ExecutionEnd } from '../execution/index.js';
import type { EmitterFor } from '../events/index.js';
import { callRefusal } from '../execution/index.js';
import { decideRun, type RunDecision } from '../execution/index.js';
import { journaledSteps, type CallSteps } from '../execution/index.js';
import { JoinedCallGone, joinedMessage, mirrorStream, type MirrorSource } from './stream-mirror.js';
import { StreamRun } from '../execution/index.js';
import { JOIN_FAILED } from '../calls/index.js';
import type { SessionRuntimeOptions } from './session-options.js';

export type { SessionRuntimeOptions } from './session-options.js';

type Request = JSONRPCMessage & { id: RequestId; method: string };

interface InFlight {
  readonly call: Call;
  readonly run: StreamRun;
  readonly steps: CallSteps;
  readonly requestId: RequestId;
  closed: boolean;
}

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
  /** Streams whose request is between its first read and `inflight` (see `once`). */
  private readonly starting = new Set<StreamId>();
  private standalone: Promise<GenerationWriter> | undefined;
  private lastActivityMs = Date.now();
  private closed = false;

  constructor(private readonly options: SessionRuntimeOptions) {
    this.session = options.session;
    this.server = createToolServer(options, options.modules, {
      supportedProtocolVersions: [...SESSION_SERVER_VERSIONS],
    });
    this.authInfo = authInfoOf(options.subject);
    this.transport = new LogTransport(this);
  }

  get idleSinceMs(): number {
    return this.inflight.size > 0 ? Date.now() : this.lastActivityMs;
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Registers the modules and connects; replays the stored initialize when the session is restored. */
  async start(restoreFrom: SessionRecord | undefined): Promise<void> {
    for (const module of this.options.modules) {
      await registerModule(this.server, module, this, { sessionId: this.session });
    }
    attachEventMethods(this.server, this.options.events);
    await this.server.connect(this.transport);
    if (restoreFrom !== undefined) await replayInitialize(this.transport, restoreFrom);
  }

  /** A request from the client: starts (or skips) its stream, then hands it to the SDK. */
  async request(call: Call, message: Request): Promise<void> {
    await this.once(call, message, async (entry, verdict) => {
      const refusal = callRefusal(message, verdict, this.inflight.size, this.options);
      if (refusal !== undefined) {
        await entry.run.generation.finish({ jsonrpc: '2.0', id: message.id, error: refusal });
        return call.finish('answered');
      }
      entry.run.reportStart();
      this.inflight.set(entry.stream, entry);
      this.transport.receive(message);
    });
  }

  /**
   * A request that joins another call with the same idempotency key (`joins`): its stream carries
   * that call's messages — progress under this request's own token — and ends with its final
   * message, under this request's id; the tool does not run again. A new execution of the joined
   * call resets this stream too. Cancelled, it ends as any call does.
   */
  async join(
    call: Call,
    message: Request,
    joins: Omit<MirrorSource, 'log' | 'topic' | 'heads' | 'gone'>,
    source: Pick<MirrorSource, 'log' | 'topic' | 'gone'>,
  ): Promise<void> {
    await this.once(call, message, (entry) => {
      const { stream } = entry;
      this.inflight.set(stream, entry);
      const token = (message as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta
        ?.progressToken;
      void mirrorStream(
        { ...source, heads: this.options.heads, ...joins },
        {
          stopped: () => entry.closed,
          reset: () => entry.run.retry(),
          message: async (payload) => {
            const forwarded = joinedMessage(payload, token);
            if (forwarded !== undefined) await entry.run.send(forwarded);
          },
          final: (payload) =>
            this.finish(stream, { ...(payload as object), id: message.id } as JSONRPCMessage),
        },
      ).catch(async (error: unknown) => {
        const failed = error instanceof JoinedCallGone ? idempotencyKeyGone() : JOIN_FAILED;
        if (!entry.closed)
          await this.finish(stream, { jsonrpc: '2.0', id: message.id, error: failed });
      });
      return Promise.resolve();
    });
  }

  /**
   * Begins a request's stream — unless this process runs it or is beginning it already, or it
   * finished — and hands it to `start`. A request delivered twice (redelivered, or a keyed request
   * passed on again) whose copies are read while a handoff settles reaches here twice at once:
   * only the first may run.
   */
  private async once(
    call: Call,
    message: Request,
    start: (entry: InFlight & { stream: StreamId }, verdict: RunDecision) => Promise<void>,
  ): Promise<void> {
    this.lastActivityMs = Date.now();
    const stream = requestStreamId(message.id);
    if (this.inflight.has(stream) || this.starting.has(stream)) return call.finish('answered');
    this.starting.add(stream);
    try {
      const head = await this.options.heads.decided(this.session, stream);
      const verdict = decideRun(head, this.options);
      // Redelivered after it finished (a crash before the commit): never run a call twice.
      if (verdict.kind === 'done') return call.finish('answered');
      // Reading its partition waits while the log is waited out; a call it refuses for longer
      // than that is answered with an error by the worker.
      const run = await StreamRun.begin(
        this.options,
        this.session,
        stream,
        head,
        () => this.closed,
      );
      const steps = journaledSteps(this.options.steps, this.session, stream, run.attempt, {
        maxStepBytes: this.options.maxStepBytes,
        onStep: this.options.onStep,
        onRetry: (error) => this.options.onWriteFailure?.(stream, error),
      });
      await start({ stream, call, run, steps, requestId: message.id, closed: false }, verdict);
    } finally {
      this.starting.delete(stream);
    }
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
    for (const { requestId } of [...this.inflight.values()]) {
      await this.other({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId, reason },
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
      entry.closed = true;
      entry.call.finish('stopped');
    }
    this.inflight.clear();
    await this.server.close();
  }

  /** Where the SDK's outbound messages go. */
  async route(message: JSONRPCMessage, options: TransportSendOptions | undefined): Promise<void> {
    if (this.closed) return;
    if (isResponse(message)) {
      await this.finish(requestStreamId(message.id), message);
      return;
    }
    // A request to the client (an elicitation, a sampling) carries the tool's trace in `_meta`.
    if ('id' in message) message = withTraceMeta(message);
    // A message a tool sends without naming its request (e.g. `ctx.mcpReq.elicitInput` in SDK v2)
    // still belongs to the call it runs in: the execution context says which.
    const execution = currentExecution();
    const related =
      options?.relatedRequestId !== undefined
        ? requestStreamId(options.relatedRequestId)
        : execution?.sessionId === this.session
          ? (execution.stream as StreamId)
          : undefined;
    if (related !== undefined) {
      const entry = this.inflight.get(related);
      // Nothing of a finished or cancelled request goes out after its end.
      if (entry === undefined || entry.closed) return;
      // Pipelined: the tool goes on while its message is written (the final response is queued
      // behind it, and a failed write poisons the generation, so nothing lands after a hole). Past
      // MAX_UNACKNOWLEDGED messages in flight the tool waits for the log: memory stays bounded.
      const written = entry.run.send(message);
      if (entry.run.generation.unacknowledged > MAX_UNACKNOWLEDGED) await written;
      else written.catch(() => undefined);
      return;
    }
    const standalone = (this.standalone ??= this.options.heads
      .get(this.session, STANDALONE_STREAM)
      .then((previous) =>
        this.options.writer.begin(this.session, STANDALONE_STREAM, { previous }),
      ));
    try {
      await (await standalone).send(message);
    } catch (error) {
      // A refused write poisons the generation: the next message starts another (a reset for
      // the listener) instead of failing forever.
      if (this.standalone === standalone) this.standalone = undefined;
      throw error;
    }
  }

  /** @internal The execution a tool callback runs in. */
  execution(requestId: RequestId): Execution | undefined {
    const stream = requestStreamId(requestId);
    const entry = this.inflight.get(stream);
    if (entry === undefined) return undefined;
    const generation = entry.run.generation.generation;
    return {
      sessionId: this.session,
      stream,
      generation,
      attempt: generation.attempt,
      ...(this.options.subject === undefined ? {} : { subject: this.options.subject }),
      step: entry.steps.forExecution(formatGeneration(generation)),
    };
  }

  /** Tells the client its tools changed (`notifications/tools/list_changed`, on its standalone stream). */
  async toolsChanged(): Promise<void> {
    if (this.closed) return;
    await this.server.server.sendToolListChanged();
  }

  /** @internal What tools emit event occurrences with, for a call's subject. */
  get emitAs(): EmitterFor | undefined {
    return this.options.events?.emitAs;
  }

  /** @internal The logger tools get. */
  get logger(): ToolLogger | undefined {
    return this.options.logger;
  }

  /** @internal Each tool execution's end, for the operator's log. */
  onExecutionEnd(end: ExecutionEnd): void {
    this.options.onExecutionEnd?.(end);
  }

  /** @internal A retryable failure: the call runs again as a new generation of its stream. */
  async retry(requestId: RequestId): Promise<void> {
    const stream = requestStreamId(requestId);
    const entry = this.inflight.get(stream);
    if (entry === undefined || entry.closed) return;
    await entry.run.retry();
  }

  /**
   * Ends a call's stream with its final message. A write the log refused does not leave the stream
   * hanging until its partition moves: the final message is written again as a new generation
   * (the client is reset, then gets the result), with backoff while the log stays unavailable. The
   * call stays in flight meanwhile, so closing the session (partition revoked) still accounts for it.
   */
  private async finish(stream: StreamId, message: JSONRPCMessage | undefined): Promise<void> {
    const entry = this.inflight.get(stream);
    if (entry === undefined || entry.closed) return;
    entry.closed = true;
    for (let failures = 0; ; failures++) {
      try {
        await entry.run.generation.finish(message);
        break;
      } catch (error) {
        if (this.closed) return; // the next owner runs the call again
        this.options.onWriteFailure?.(stream, error);
        await backoff(failures);
        if (this.closed) return;
        if (!entry.run.generation.poisoned) continue; // the terminal record is in; its head is retried
        try {
          await entry.run.retry();
        } catch {
          // Still unavailable: the next round waits longer.
        }
      }
    }
    if (this.closed) return; // close() stopped this call already
    this.inflight.delete(stream);
    entry.call.finish('answered');
  }
}

/** Messages of one call written ahead of the log before its tool waits (see `route`). */
const MAX_UNACKNOWLEDGED = 256;

function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return 'id' in message && !('method' in message) && ('result' in message || 'error' in message);
}
