import {
  invalidOption,
  httpUrlOption,
  positiveIntegers,
  type GroupPort,
  type Keyring,
  type LogPort,
  type TopicNames,
} from '@tidemark/protocol';
import type { ExecutionEnd, ExecutionStart } from './execution/index.js';
import type { CallStepReport } from './execution/index.js';
import type { ToolLogger, ToolModule } from '@tidemark/tools';
import { problemToStderr, stderrLogger } from './execution/index.js';

export interface WorkerOptions {
  /** The log: Kafka or the embedded one. It must also manage consumer groups. */
  log: LogPort & GroupPort;
  topics: TopicNames;
  modules: readonly ToolModule[];
  /**
   * Consumer group of the workers.
   * @default 'tidemark-workers'
   */
  group?: string;
  /**
   * Name and version the MCP server reports.
   * @default { name: 'tidemark', version: '0.1.0' }
   */
  serverInfo?: { name: string; version: string };
  /** `instructions` the server gives clients in `initialize`; each module's own are added after. */
  instructions?: string;
  /**
   * Sessions held in memory at most; idle ones beyond are dropped (restored on their next request).
   * @default 1000
   */
  maxSessions?: number;
  /**
   * Calls running at once on this worker; reading waits beyond it.
   * @default 64
   */
  maxConcurrentCalls?: number;
  /**
   * The gateways' keyring (their event-id secret). Set, a record of `requests` without a valid
   * gateway seal — written by anyone else who can write the topic, naming any subject — is dropped
   * unanswered and counted (`tidemark.worker.refusals` reason `unsealed`). Unset, records are taken
   * as they come: whoever can write `requests` is trusted (see the Kafka ACLs in docs/kafka-trust.md).
   * Required when a module offers event types: it signs their cursors, so a cursor from one
   * worker verifies on every other.
   */
  keyring?: Keyring;
  /**
   * Tasks (Tasks extension) running at once on this worker, in slots of their own: a task may run
   * for hours, so tasks never hold the slots short calls need. A task waits for a slot as `working`.
   * @default 32
   */
  maxConcurrentTasks?: number;
  /**
   * Calls of one subject (without authentication: one client address) running at once on this
   * worker; its next wait, fairly, behind other subjects'. The rest is headroom for them.
   * @default half of `maxConcurrentCalls`
   */
  maxCallsPerSubject?: number;
  /**
   * Tasks of one subject running at once on this worker.
   * @default half of `maxConcurrentTasks`
   */
  maxTasksPerSubject?: number;
  /**
   * Requests of one subject waiting for a slot on this worker; more are answered with an error
   * ("retry later"). While a subject waits, the partitions it shares with others are read on.
   * @default 256
   */
  maxQueuedCallsPerSubject?: number;
  /**
   * Requests of all subjects waiting for a slot; beyond it, reading `requests` waits
   * (backpressure to the log, not memory).
   * @default 1024
   */
  maxQueuedCalls?: number;
  /**
   * Calls of one session running at once; more are answered with an error.
   * @default 16
   */
  maxConcurrentCallsPerSession?: number;
  /**
   * Executions of one call — retries and takeovers after a worker died — after which it is answered
   * with an error instead of run again.
   * @default 8
   */
  maxExecutionsPerCall?: number;
  /**
   * Bytes a durable step's journaled outcome (`currentExecution().step`) may take; a larger one fails
   * the step with `TIDEMARK_STEP_TOO_LARGE` (journal an id, not the document).
   * @default 65_536
   */
  maxStepBytes?: number;
  /**
   * A task's durable sleep (`currentExecution().sleep`) shorter than this waits in memory, its
   * slot given back: it wakes in milliseconds. A longer one leaves memory — its call ends, its
   * request stays uncommitted, a timer is all that is kept — and is dispatched again at its wake
   * time, its heads and journal read again (tens of ms a wake, in a task slot). Calls of sessions
   * always sleep in memory. 0: every task's sleep leaves memory.
   * @default 60_000
   */
  sleepInMemoryMs?: number;
  /**
   * The MCP endpoint as clients reach it (through the ingress): the URLs of signals
   * (`Execution.signal`) are `<publicUrl>/signals/<token>`, served by every gateway.
   * @default 'http://127.0.0.1:3000/mcp' (`tidemark dev`'s)
   */
  publicUrl?: string;
  /**
   * Bytes of JSON one message a tool sends may take — its result above all. A message larger than
   * one record of the log is written in parts and read whole; one larger than this is answered with
   * an error naming its size and this limit (a message before the result: a log message says so).
   * @default 16 MiB
   */
  maxResultBytes?: number;
  /**
   * A session with no request and no open stream for this long expires: its record and heads are
   * tombstoned, and its next request is answered "session not found" (the client re-initializes).
   * @default 3_600_000 (1 hour)
   */
  sessionTtlMs?: number;
  /**
   * A finished stream's head, holding its final result for a resume after its events expired, is
   * kept this long after it finished.
   * @default 3_600_000 (1 hour, the default resume window)
   */
  resultTtlMs?: number;
  /**
   * A task's `ttlMs` (Tasks extension): a task still unfinished this long after it was created is
   * failed ("expired"); a finished one is kept at least this long after its creation.
   * @default 3_600_000 (1 hour, as the result retention)
   */
  taskTtlMs?: number;
  /**
   * The `pollIntervalMs` a task suggests to its client.
   * @default 1000
   */
  taskPollIntervalMs?: number;
  /**
   * An idle session's MCP server is dropped after this long (restored on its next request).
   * @default 60_000
   */
  serverIdleMs?: number;
  /**
   * A partition whose read loop has not come back for this long, while call slots are free, makes
   * the worker not alive (`liveness()`, the CLI's `/healthz`): it is wedged, and a restart hands its
   * partitions on.
   * @default 60_000
   */
  stallMs?: number;
  /**
   * How long a worker giving up a partition (drained, or rebalanced away when workers scale) goes on
   * running the calls it started there, while the partition's next owner serves the new requests:
   * a call that ends within it is never run again, and its client sees no reset. A call that
   * outlives it is taken over by the next owner (counted in `tidemark.worker.handoff.calls`). 0
   * gives partitions up at once. Keep it below the pod's termination grace period.
   * @default 20_000
   */
  handoffTimeoutMs?: number;
  /**
   * How often committable offsets are committed.
   * @default 1000
   */
  commitIntervalMs?: number;
  /**
   * Long-poll wait on `requests`.
   * @default 500
   */
  pollMs?: number;
  /**
   * Events extension: one poll or push stream keeps its event stream's source running this long
   * (a poller that stops, stops the source after it).
   * @default 300_000 (5 minutes)
   */
  eventLeaseMs?: number;
  /**
   * Events extension: an idle push stream (`events/stream`) sends a heartbeat this often; at most
   * 30 s, as the extension requires.
   * @default 15_000
   */
  eventHeartbeatMs?: number;
  /**
   * Events extension: a push stream (`events/stream`) is answered with its cursor after this long
   * and its client asks again: a push holds a slot, and on the session lane a closed connection
   * does not end it (security review H2).
   * @default 600_000 (10 minutes)
   */
  eventPushMaxMs?: number;
  /**
   * Events extension: how often the owner of a partition looks for new interest in its event
   * streams (how long a first poller waits, at most, for a source to start).
   * @default 1_000
   */
  eventScanMs?: number;
  /**
   * Events extension: webhook callbacks may be http to a loopback address, and a client without
   * authentication may subscribe (as `anonymous`). For development and tests only: a deployment
   * delivers to public https receivers, for authenticated subjects.
   * @default false
   */
  allowLoopbackWebhooks?: boolean;
  /**
   * Events extension: webhook subscriptions one subject may hold.
   * @default 100
   */
  maxSubscriptionsPerSubject?: number;
  /**
   * Events extension: distinct event streams one subject (unauthenticated: all together) reads by
   * polls and pushes on this worker at once; each runs its source for a lease (security review M5).
   * @default 64
   */
  maxEventStreamsPerSubject?: number;
  /**
   * Events extension: a webhook subscription's lifetime when the client asks for none; the client
   * refreshes it before then. What a client asks for is bounded by 7 days.
   * @default 86_400_000 (a day)
   */
  subscriptionTtlMs?: number;
  /**
   * Events extension: tries of one webhook delivery (waiting `webhookBackoffMs`, doubling with
   * jitter, up to 5 minutes between tries) before the occurrence is given up and a `gap` is sent.
   * @default 10
   */
  webhookAttempts?: number;
  /**
   * Events extension: the first wait before a webhook delivery is tried again.
   * @default 1_000
   */
  webhookBackoffMs?: number;
  /** Sees every durable step a call journals or replays (`currentExecution().step`). */
  onStep?: (step: CallStepReport) => void;
  /** Sees every execution start: for metrics and tests. */
  onExecution?: (start: ExecutionStart) => void;
  /**
   * Sees every tool execution's end — tool, outcome, duration, attempt, the error — for the one log
   * line per execution an operator reads (`tidemark` logs it).
   */
  onExecutionEnd?: (end: ExecutionEnd) => void;
  /**
   * The logger tools get as `currentExecution().log` (a child per execution). Default: JSON lines
   * on stderr.
   */
  logger?: ToolLogger;
  /** Problems that do not stop the worker (a malformed record, a failed write). Default: stderr. */
  onProblem?: (problem: string, error?: unknown) => void;
}

/**
 * @deprecated Renamed `ExecutionStart` ("event" is the Events extension's and the SSE id's word);
 * this alias goes in the next minor release.
 */
export type ExecutionEvent = ExecutionStart;

/** The defaults, as the `@default` tags above say. */
export const WORKER_DEFAULTS = {
  group: 'tidemark-workers',
  serverInfo: { name: 'tidemark', version: '0.1.0' },
  maxSessions: 1_000,
  maxConcurrentCalls: 64,
  maxConcurrentTasks: 32,
  maxQueuedCallsPerSubject: 256,
  maxQueuedCalls: 1_024,
  maxConcurrentCallsPerSession: 16,
  maxExecutionsPerCall: 8,
  maxStepBytes: 64 * 1024,
  sleepInMemoryMs: 60_000,
  publicUrl: 'http://127.0.0.1:3000/mcp',
  maxResultBytes: 16 * 1024 * 1024,
  sessionTtlMs: 60 * 60 * 1000,
  resultTtlMs: 60 * 60 * 1000,
  taskTtlMs: 60 * 60 * 1000,
  taskPollIntervalMs: 1_000,
  serverIdleMs: 60 * 1000,
  commitIntervalMs: 1_000,
  handoffTimeoutMs: 20_000,
  pollMs: 500,
  stallMs: 60_000,
  eventLeaseMs: 5 * 60 * 1000,
  eventHeartbeatMs: 15_000,
  eventPushMaxMs: 10 * 60 * 1000,
  eventScanMs: 1_000,
  allowLoopbackWebhooks: false,
  maxSubscriptionsPerSubject: 100,
  maxEventStreamsPerSubject: 64,
  subscriptionTtlMs: 24 * 60 * 60 * 1000,
  webhookAttempts: 10,
  webhookBackoffMs: 1_000,
} as const;

/** Options with their defaults applied, validated. */
export type CompiledWorkerOptions = Required<
  Omit<WorkerOptions, 'onExecution' | 'onExecutionEnd' | 'onStep' | 'instructions' | 'keyring'>
> &
  Pick<WorkerOptions, 'onExecution' | 'onExecutionEnd' | 'onStep' | 'instructions' | 'keyring'>;

type NumberOption = {
  [K in keyof typeof WORKER_DEFAULTS]: (typeof WORKER_DEFAULTS)[K] extends number ? K : never;
}[keyof typeof WORKER_DEFAULTS];

/** Options where 0 means something: hand off at once; every durable sleep leaves memory. */
const ZERO_OR_MORE = ['handoffTimeoutMs', 'sleepInMemoryMs'] as const;

/** Every other number option with a default, and the shares, is a positive integer. */
const POSITIVE_INTEGERS = [
  ...(Object.keys(WORKER_DEFAULTS) as Array<keyof typeof WORKER_DEFAULTS>).filter(
    (name): name is NumberOption =>
      typeof WORKER_DEFAULTS[name] === 'number' &&
      !(ZERO_OR_MORE as readonly string[]).includes(name),
  ),
  'maxCallsPerSubject',
  'maxTasksPerSubject',
] as const;

/** Applies the defaults and checks every number up front: a bad option throws a TypeError now. */
export function compileWorkerOptions(options: WorkerOptions): CompiledWorkerOptions {
  if (options.modules.length === 0)
    throw invalidOption('modules', 'at least one tool module', '[]');
  const given = {
    ...WORKER_DEFAULTS,
    onProblem: problemToStderr,
    logger: stderrLogger({ name: 'tidemark-worker' }),
    ...options,
  };
  const compiled = {
    maxCallsPerSubject: Math.max(1, Math.ceil(given.maxConcurrentCalls / 2)),
    maxTasksPerSubject: Math.max(1, Math.ceil(given.maxConcurrentTasks / 2)),
    ...given,
  };
  positiveIntegers(compiled, POSITIVE_INTEGERS);
  if (compiled.keyring === undefined && compiled.modules.some((m) => (m.events ?? []).length > 0))
    throw invalidOption(
      'keyring',
      "the gateways' keyring when a module offers event types (it signs their cursors)",
      'none',
    );
  compiled.publicUrl = httpUrlOption('publicUrl', compiled.publicUrl);
  if (compiled.eventHeartbeatMs > 30_000)
    throw invalidOption(
      'eventHeartbeatMs',
      'at most 30000 (the Events extension)',
      compiled.eventHeartbeatMs,
    );
  for (const name of ZERO_OR_MORE)
    if (!Number.isInteger(compiled[name]) || compiled[name] < 0)
      throw invalidOption(name, 'a whole number of milliseconds, 0 or more', compiled[name]);
  return compiled;
}
