import type { JSONRPCMessage, MessageClassification } from '@modelcontextprotocol/server';
import { SessionStore, StreamHeadStore, StreamWriter } from '@tidemark/log';
import {
  CLASSIFICATION_HEADER,
  CONTROL_HEADER,
  ErrorCodes,
  invalidOption,
  isTidemarkError,
  newWorkerEpoch,
  parseSessionId,
  requestStreamId,
  SESSION_ENDED,
  SESSION_TOUCHED,
  streamHeadKey,
  SUBJECT_HEADER,
  type GroupMembership,
  type GroupPort,
  type LogPort,
  type LogRecord,
  type RequestId,
  type SessionId,
  type StreamId,
  type TopicNames,
  type WorkerEpoch,
} from '@tidemark/protocol';
import { context, SpanKind, trace, type Span } from '@opentelemetry/api';
import {
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_KAFKA_OFFSET,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  contextFromHeaders,
  recordLiveSessions,
  recordRequestQueueLag,
  tidemarkTracer,
} from '@tidemark/otel';
import { backoff } from './backoff.js';
import { Housekeeping } from './housekeeping.js';
import { OffsetTracker } from './offset-tracker.js';
import { ModernExchange } from './modern-exchange.js';
import { SessionRuntime } from './session-runtime.js';
import type { ToolModule } from './tool-module.js';

export interface WorkerOptions {
  /** The log: Kafka or the embedded one. It must also manage consumer groups. */
  log: LogPort & GroupPort;
  topics: TopicNames;
  modules: readonly ToolModule[];
  /** Consumer group of the workers. Default `tidemark-workers`. */
  group?: string;
  /** Name and version the MCP server reports. */
  serverInfo?: { name: string; version: string };
  /** Sessions held in memory at most; idle ones beyond are dropped (restored on their next request). Default 1,000. */
  maxSessions?: number;
  /** Calls running at once on this worker; reading waits beyond it. Default 64. */
  maxConcurrentCalls?: number;
  /** Calls of one session running at once; more are answered with an error. Default 16. */
  maxConcurrentCallsPerSession?: number;
  /**
   * Executions of one call — retries and takeovers after a worker died — after which it is answered
   * with an error instead of run again. Default 8.
   */
  maxExecutionsPerCall?: number;
  /**
   * A session with no request and no open stream for this long expires: its record and heads are
   * tombstoned, and its next request is answered "session not found" (the client re-initializes).
   * Default 1 hour.
   */
  sessionTtlMs?: number;
  /**
   * A finished stream's head, holding its final result for a resume after its events expired, is
   * kept this long after it finished. Default 1 hour (the default resume window).
   */
  resultTtlMs?: number;
  /** An idle session's MCP server is dropped after this long (restored on its next request). Default 60 s. */
  serverIdleMs?: number;
  /** How often committable offsets are committed. Default 1,000 ms. */
  commitIntervalMs?: number;
  /** Long-poll wait on `requests`. Default 500 ms. */
  pollMs?: number;
  /** Sees every execution start: for metrics and tests. */
  onExecution?: (event: {
    session: SessionId;
    stream: StreamId;
    attempt: number;
    cause: string;
  }) => void;
  /** Problems that do not stop the worker (a malformed record, a failed write). Default: stderr. */
  onProblem?: (problem: string, error?: unknown) => void;
}

export const WORKER_DEFAULTS = {
  group: 'tidemark-workers',
  serverInfo: { name: 'tidemark', version: '0.1.0' },
  maxSessions: 1_000,
  maxConcurrentCalls: 64,
  maxConcurrentCallsPerSession: 16,
  maxExecutionsPerCall: 8,
  sessionTtlMs: 60 * 60 * 1000,
  resultTtlMs: 60 * 60 * 1000,
  serverIdleMs: 60 * 1000,
  commitIntervalMs: 1_000,
  pollMs: 500,
} as const;

interface PartitionState {
  /** Set once the committed offset is known: nothing is committed before. */
  tracker: OffsetTracker | undefined;
  readonly stop: AbortController;
  done: Promise<void>;
  lastCommitted: bigint | undefined;
  /** Heads of finished stateless requests, forgotten once their request's offset is committed. */
  readonly forgetAfterCommit: Array<{ offset: bigint; key: string }>;
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

/**
 * The tool worker: a member of the workers' consumer group on `requests`. For each session of its
 * partitions it holds an `McpServer` with the tool modules, restored from `sessions` on first
 * sight; every message the server sends is written to `events` stamped with its generation. A
 * request's offset is committed only once its stream is terminal.
 */
export class Worker {
  readonly epoch: WorkerEpoch = newWorkerEpoch();
  private readonly options: Required<Omit<WorkerOptions, 'onExecution' | 'onProblem'>> &
    Pick<WorkerOptions, 'onExecution'>;
  private readonly onProblem: (problem: string, error?: unknown) => void;
  private writer!: StreamWriter;
  private heads!: StreamHeadStore;
  private sessions!: SessionStore;
  private partitionCount = 0;
  private membership: GroupMembership | undefined;
  /** Resolves with the membership: a partition may be assigned before `joinGroup` returns. */
  private joined: Promise<GroupMembership> | undefined;
  private readonly partitions = new Map<number, PartitionState>();
  private readonly runtimes = new Map<SessionId, SessionRuntime>();
  private readonly runtimePartition = new Map<SessionId, number>();
  private readonly exchanges = new Map<SessionId, ModernExchange>();
  /** The span of each call in flight, ended when its stream is terminal. */
  private readonly callSpans = new Map<string, Span>();
  private housekeeping!: Housekeeping;
  private commitTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private running = 0;
  private readonly slotWaiters: Array<() => void> = [];
  private stopped = false;

  constructor(options: WorkerOptions) {
    if (options.modules.length === 0)
      throw invalidOption('modules', 'at least one tool module', '[]');
    this.options = { ...WORKER_DEFAULTS, ...options };
    for (const key of [
      'maxSessions',
      'maxConcurrentCalls',
      'maxConcurrentCallsPerSession',
      'maxExecutionsPerCall',
      'sessionTtlMs',
      'resultTtlMs',
      'serverIdleMs',
      'commitIntervalMs',
      'pollMs',
    ] as const) {
      const value = this.options[key];
      if (!Number.isInteger(value) || value < 1)
        throw invalidOption(key, 'a positive integer', value);
    }
    this.onProblem =
      options.onProblem ??
      ((problem, error) =>
        process.stderr.write(
          `tidemark worker: ${problem}${error === undefined ? '' : `: ${error instanceof Error ? error.message : JSON.stringify(error)}`}\n`,
        ));
  }

  /** Joins the group and starts reading the partitions it is given. */
  async start(): Promise<void> {
    const { log, topics } = this.options;
    this.partitionCount = await log.partitionCount(topics.requests);
    const eventsCount = await log.partitionCount(topics.events);
    if (eventsCount !== this.partitionCount) {
      throw invalidOption(
        'topics',
        `requests and events with equal partition counts`,
        `${this.partitionCount} and ${eventsCount}`,
      );
    }
    const stores = { port: log, topics, partitionCount: this.partitionCount };
    this.writer = new StreamWriter({ ...stores, epoch: this.epoch });
    this.heads = new StreamHeadStore(stores);
    this.sessions = new SessionStore(stores);
    this.housekeeping = new Housekeeping({
      sessions: this.sessions,
      heads: this.heads,
      sessionTtlMs: this.options.sessionTtlMs,
      resultTtlMs: this.options.resultTtlMs,
      now: Date.now,
      isBusy: (session) =>
        (this.runtimes.get(session as SessionId)?.inflightCount ?? 0) > 0 ||
        this.exchanges.has(session as SessionId),
      onExpired: (session) => this.dropRuntime(session),
    });
    this.joined = log.joinGroup({
      topic: topics.requests,
      group: this.options.group,
      onAssigned: (assigned) => assigned.forEach((p) => this.assign(p)),
      onRevoked: (revoked) => this.revoke(revoked),
    });
    this.membership = await this.joined;
    this.commitTimer = setInterval(() => void this.commitAll(), this.options.commitIntervalMs);
    this.commitTimer.unref();
    // A sweep a few times per TTL (and per server idle time), at least once a minute.
    const shortest = Math.min(
      this.options.sessionTtlMs,
      this.options.resultTtlMs,
      this.options.serverIdleMs,
    );
    const sweepMs = Math.max(100, Math.min(60_000, Math.floor(shortest / 4)));
    this.sweepTimer = setInterval(() => void this.sweep(), sweepMs);
    this.sweepTimer.unref();
  }

  /**
   * Expires what outlived its TTL in every partition this worker owns, and drops the MCP servers
   * of sessions idle longer than `serverIdleMs` (memory follows what is live, not what was seen).
   */
  async sweep(): Promise<void> {
    if (this.sweeping || this.stopped) return;
    this.sweeping = true;
    try {
      const idleBefore = Date.now() - this.options.serverIdleMs;
      for (const [session, runtime] of [...this.runtimes]) {
        if (runtime.inflightCount === 0 && runtime.idleSinceMs <= idleBefore)
          await this.dropRuntime(session);
      }
      for (const partition of [...this.partitions.keys()]) {
        try {
          await this.housekeeping.sweep(partition);
        } catch (error) {
          this.onProblem(`expiring sessions and results of partition ${partition}`, error);
        }
      }
    } finally {
      this.sweeping = false;
    }
  }

  /** Partitions this worker reads now. */
  get assignedPartitions(): number[] {
    return [...this.partitions.keys()].sort((a, b) => a - b);
  }

  /** Stops reading, ends running calls (their streams stay unfinished and are re-run elsewhere), commits and leaves. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.commitTimer !== undefined) clearInterval(this.commitTimer);
    if (this.sweepTimer !== undefined) clearInterval(this.sweepTimer);
    await this.revoke([...this.partitions.keys()]);
    await this.membership?.leave();
  }

  private assign(partition: number): void {
    if (this.partitions.has(partition) || this.stopped) return;
    const state: PartitionState = {
      tracker: undefined,
      stop: new AbortController(),
      done: Promise.resolve(),
      lastCommitted: undefined,
      forgetAfterCommit: [],
    };
    this.partitions.set(partition, state);
    this.housekeeping.assign(partition);
    state.done = this.readPartition(partition, state).catch((error: unknown) =>
      this.onProblem(`partition ${partition} stopped`, error),
    );
  }

  private async revoke(partitions: readonly number[]): Promise<void> {
    const states = partitions.flatMap((p) => {
      const state = this.partitions.get(p);
      return state === undefined ? [] : [[p, state] as const];
    });
    for (const [, state] of states) state.stop.abort();
    await Promise.all(states.map(([, state]) => state.done));
    for (const [session, partition] of this.runtimePartition) {
      if (!partitions.includes(partition)) continue;
      const stopped = (await this.runtimes.get(session)?.close()) ?? 0;
      for (let i = 0; i < stopped; i++) this.release();
      if (this.runtimes.delete(session)) recordLiveSessions(-1);
      this.runtimePartition.delete(session);
    }
    for (const [partition, state] of states) {
      await this.commit(partition, state);
      this.partitions.delete(partition);
      this.housekeeping.revoke(partition);
      for (const key of [...this.callSpans.keys()]) {
        if (key.startsWith(`${partition}:`))
          this.endCallSpan(partition, BigInt(key.slice(key.indexOf(':') + 1)));
      }
    }
  }

  private async readPartition(partition: number, state: PartitionState): Promise<void> {
    const { log, topics } = this.options;
    // The group may assign partitions before joinGroup resolves: without waiting for the
    // membership, its committed offsets are unknown and the partition is read from its start.
    const committed = await (await this.joined)?.committed(partition);
    let next = committed ?? (await log.offsets(topics.requests, partition)).logStartOffset;
    const tracker = new OffsetTracker(next);
    state.tracker = tracker;
    state.lastCommitted = committed;
    while (!state.stop.signal.aborted) {
      let result;
      try {
        result = await log.fetch(topics.requests, partition, next, {
          maxWaitMs: this.options.pollMs,
        });
      } catch (error) {
        if (isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange) {
          // Requests expired before any worker read them: go on from what is left, and say so.
          const start = (await log.offsets(topics.requests, partition)).logStartOffset;
          this.onProblem(`requests ${partition}: offsets ${next}..${start - 1n} expired unread`);
          next = start;
          tracker.skipTo(next);
          continue;
        }
        if (isTidemarkError(error) && error.code === ErrorCodes.closed) return;
        this.onProblem(`reading requests ${partition}`, error);
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      for (const record of result.records) {
        if (state.stop.signal.aborted) return;
        tracker.read(record.offset, record.offset + 1n);
        await this.dispatch(partition, tracker, record);
      }
      next = result.nextOffset;
      tracker.skipTo(next);
    }
  }

  private async dispatch(
    partition: number,
    tracker: OffsetTracker,
    record: LogRecord,
  ): Promise<void> {
    const done = () => tracker.done(record.offset);
    const session = record.key === null ? undefined : parseSessionId(record.key);
    let message: JSONRPCMessage | undefined;
    try {
      message =
        record.value === null
          ? undefined
          : (JSON.parse(Buffer.from(record.value).toString()) as JSONRPCMessage);
    } catch {
      message = undefined;
    }
    if (session === undefined || message === undefined || typeof message !== 'object') {
      this.onProblem(
        `requests ${partition}@${record.offset}: not a session's JSON-RPC message; skipped`,
      );
      return done();
    }
    this.housekeeping.touch(partition, session);
    const control = record.headers.find(([name]) => name === CONTROL_HEADER)?.[1];
    if (control === SESSION_ENDED) {
      await this.endSession(partition, session);
      return done();
    }
    if (control === SESSION_TOUCHED) return done();
    const classification = record.headers.find(([name]) => name === CLASSIFICATION_HEADER)?.[1];
    if (classification !== undefined)
      return this.dispatchModern(partition, tracker, record, session, message, classification);
    // A log that is briefly unavailable (a leader or controller failover) is waited out before
    // the request is answered with an error; nothing of the call has started before these reads.
    const started = Date.now();
    const stop = this.partitions.get(partition)?.stop.signal;
    for (let failures = 0; ; failures++) {
      try {
        return await this.dispatchSession(partition, record, session, message, done);
      } catch (error) {
        if (stop?.aborted === true || this.stopped) return; // the next owner runs it
        const retryable = isTidemarkError(error) && error.retryable;
        if (retryable && Date.now() - started < 60_000) {
          this.onProblem(
            `requests ${partition}@${record.offset}: the log is unavailable; retrying`,
            error,
          );
          await backoff(failures);
          continue;
        }
        this.onProblem(`requests ${partition}@${record.offset}: failed`, error);
        await this.answerFailure(session, message);
        return done();
      }
    }
  }

  /** A message of the session lane: restores the session's server if needed and hands it over. */
  private async dispatchSession(
    partition: number,
    record: LogRecord,
    session: SessionId,
    message: JSONRPCMessage,
    done: () => void,
  ): Promise<void> {
    // The gateway keeps an initialize's params once, in the session's record.
    if ('method' in message && message.method === 'initialize' && !('params' in message)) {
      const stored = (await this.sessions.get(session))?.initialize as
        { params?: unknown } | undefined;
      message = { ...message, params: stored?.params ?? {} } as JSONRPCMessage;
    }
    const runtime = await this.runtimeFor(session, partition, message);
    if (runtime === undefined) {
      this.onProblem(
        `requests ${partition}@${record.offset}: session ${session} is unknown or ended; skipped`,
      );
      await this.answerFailure(session, message, {
        code: -32001,
        message: 'Session not found: it ended or expired; initialize a new one',
      });
      return done();
    }
    if ('method' in message && 'id' in message && message.id !== undefined) {
      await this.slot();
      recordRequestQueueLag(Date.now() - record.timestampMs);
      const request = message as JSONRPCMessage & { id: RequestId; method: string };
      // The call continues the trace the gateway started: its context came in the record headers.
      const parent = contextFromHeaders(record.headers);
      const span = tidemarkTracer().startSpan(
        `process ${request.method}`,
        {
          kind: SpanKind.CONSUMER,
          attributes: {
            [ATTR_MESSAGING_SYSTEM]: 'kafka',
            [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
            [ATTR_MESSAGING_DESTINATION_NAME]: this.options.topics.requests,
            [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(partition),
            [ATTR_MESSAGING_KAFKA_OFFSET]: Number(record.offset),
            [ATTR_MCP_METHOD_NAME]: request.method,
            [ATTR_MCP_SESSION_ID]: session,
            [ATTR_JSONRPC_REQUEST_ID]: String(request.id),
          },
        },
        parent,
      );
      this.callSpans.set(`${partition}:${record.offset}`, span);
      try {
        await context.with(trace.setSpan(parent, span), () =>
          runtime.request(record.offset, request),
        );
      } catch (error) {
        this.endCallSpan(partition, record.offset);
        this.release(); // the call never started: its slot is free again
        throw error;
      }
    } else {
      await runtime.other(message);
      done();
    }
  }

  /**
   * A request that failed before its tool could answer it (its session could not start: a tool
   * module's `register` threw; the log refused a write) still gets an answer: a JSON-RPC error as the
   * end of its stream. Every request a worker takes is answered.
   */
  private async answerFailure(
    session: SessionId,
    message: JSONRPCMessage,
    error = { code: -32603, message: 'Internal error: the server could not run this request' },
  ): Promise<void> {
    if (!('method' in message) || !('id' in message) || !isRequestId(message.id)) return;
    const stream = requestStreamId(message.id);
    try {
      const previous = await this.heads.get(session, stream);
      if (previous?.terminal !== undefined) return;
      const writer = await this.writer.begin(session, stream, { previous });
      await writer.finish({ jsonrpc: '2.0', id: message.id, error });
    } catch (error) {
      this.onProblem(`answering the failed request ${String(message.id)} of ${session}`, error);
    }
  }

  /**
   * The modern lane (2026-07-28): a request without a session, served by a `ModernExchange`; a
   * `notifications/cancelled` with the same key (the client closed its stream) cancels it.
   */
  private async dispatchModern(
    partition: number,
    tracker: OffsetTracker,
    record: LogRecord,
    key: SessionId,
    message: JSONRPCMessage,
    classificationJson: string,
  ): Promise<void> {
    const offset = record.offset;
    const subject = record.headers.find(([name]) => name === SUBJECT_HEADER)?.[1];
    if (!('id' in message) || !('method' in message)) {
      if ('method' in message && message.method === 'notifications/cancelled')
        this.exchanges.get(key)?.cancel();
      return tracker.done(offset);
    }
    let classification: MessageClassification;
    try {
      classification = JSON.parse(classificationJson) as MessageClassification;
    } catch {
      this.onProblem(`requests ${partition}@${offset}: unreadable classification; skipped`);
      return tracker.done(offset);
    }
    await this.slot();
    const exchange = new ModernExchange({
      key,
      subject,
      message: message,
      classification,
      modules: this.options.modules,
      serverInfo: this.options.serverInfo,
      writer: this.writer,
      heads: this.heads,
      onExecution: (event) => this.options.onExecution?.({ session: key, ...event }),
    });
    this.exchanges.set(key, exchange);
    void exchange
      .run()
      .catch(async (error: unknown) => {
        this.onProblem(`modern request ${partition}@${offset} failed`, error);
        await this.answerFailure(key, message);
      })
      .finally(() => {
        this.exchanges.delete(key);
        // Nothing resumes a stateless request: its head only guards against running it twice
        // until its offset is committed.
        this.partitions
          .get(partition)
          ?.forgetAfterCommit.push({ offset, key: streamHeadKey(key, exchange.stream) });
        tracker.done(offset);
        this.release();
      });
  }

  /** The client ended its session: its running calls are cancelled, its server and heads dropped. */
  private async endSession(partition: number, session: SessionId): Promise<void> {
    await this.runtimes.get(session)?.cancelAll('the session ended');
    await this.dropRuntime(session);
    await this.housekeeping.ended(partition, session);
  }

  /** Drops the session's MCP server (idle, ended or expired); a later request restores it. */
  private async dropRuntime(session: SessionId): Promise<void> {
    const runtime = this.runtimes.get(session);
    if (runtime === undefined) return;
    this.runtimes.delete(session);
    this.runtimePartition.delete(session);
    recordLiveSessions(-1);
    const stopped = await runtime.close();
    for (let i = 0; i < stopped; i++) this.release();
  }

  private async runtimeFor(
    session: SessionId,
    partition: number,
    message: JSONRPCMessage,
  ): Promise<SessionRuntime | undefined> {
    const existing = this.runtimes.get(session);
    if (existing !== undefined) {
      // Least recently used last: re-insert.
      this.runtimes.delete(session);
      this.runtimes.set(session, existing);
      return existing;
    }
    const isInitialize = 'method' in message && message.method === 'initialize';
    // The gateway wrote the session's record before its initialize: it names the subject.
    const record = await this.sessions.get(session);
    if (!isInitialize && record === undefined) return undefined;
    const runtime = new SessionRuntime({
      session,
      subject: record?.subject,
      modules: this.options.modules,
      serverInfo: this.options.serverInfo,
      writer: this.writer,
      heads: this.heads,
      maxConcurrentCalls: this.options.maxConcurrentCallsPerSession,
      maxExecutionsPerCall: this.options.maxExecutionsPerCall,
      onDone: (offset) => {
        this.partitions.get(partition)?.tracker?.done(offset);
        this.endCallSpan(partition, offset);
        this.release();
      },
      onExecution: (event) => this.options.onExecution?.({ session, ...event }),
      onWriteFailure: (stream, error) =>
        this.onProblem(
          `the log refused a write of ${session} ${stream}; its result is written again as a new generation`,
          error,
        ),
    });
    await runtime.start(isInitialize ? undefined : record);
    this.runtimes.set(session, runtime);
    recordLiveSessions(1);
    this.runtimePartition.set(session, partition);
    await this.evictIdle();
    return runtime;
  }

  /** Past `maxSessions`, the least recently used idle servers go. */
  private async evictIdle(): Promise<void> {
    for (const [session, runtime] of [...this.runtimes]) {
      if (this.runtimes.size <= this.options.maxSessions) return;
      if (runtime.inflightCount === 0) await this.dropRuntime(session);
    }
  }

  private endCallSpan(partition: number, offset: bigint): void {
    const key = `${partition}:${offset}`;
    this.callSpans.get(key)?.end();
    this.callSpans.delete(key);
  }

  private async slot(): Promise<void> {
    while (this.running >= this.options.maxConcurrentCalls) {
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
    this.running++;
  }

  private release(): void {
    this.running = Math.max(0, this.running - 1);
    this.slotWaiters.shift()?.();
  }

  private async commitAll(): Promise<void> {
    for (const [partition, state] of this.partitions) await this.commit(partition, state);
  }

  private async commit(partition: number, state: PartitionState): Promise<void> {
    const offset = state.tracker?.committable();
    if (offset === undefined || state.lastCommitted === offset || this.membership === undefined)
      return;
    try {
      await this.membership.commit(partition, offset);
      state.lastCommitted = offset;
    } catch (error) {
      this.onProblem(`commit requests ${partition}@${offset}`, error);
      return;
    }
    // Finished out of order, so filtered, not sliced.
    const committed = state.forgetAfterCommit.filter((entry) => entry.offset < offset);
    if (committed.length === 0) return;
    const pending = state.forgetAfterCommit.filter((entry) => entry.offset >= offset);
    state.forgetAfterCommit.splice(0, state.forgetAfterCommit.length, ...pending);
    await this.heads
      .forget(
        partition,
        committed.map((entry) => entry.key),
      )
      .catch((error: unknown) =>
        this.onProblem(`forgetting stateless heads of ${partition}`, error),
      );
  }
}
