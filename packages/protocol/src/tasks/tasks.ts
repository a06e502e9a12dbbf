import type { TaskMode } from '../records/request-records.js';
import { MetaKeys } from '../wire/meta-keys.js';
import { JsonRpcErrorCodes } from '../wire/wire.js';

// The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as pure rules: who may get a
// task, what a task's state is after each thing that happened to it (a fold, as a stream head is),
// and the shapes `tools/call` and `tasks/get` answer with. Where the events come from — records of
// a task's stream in the log — is the worker's and the gateway's business.

/** The extension's identifier, in capabilities and errors. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Where a 2026-07-28 request carries its capabilities. */
export const CLIENT_CAPABILITIES_META_KEY = MetaKeys.clientCapabilities;

/** JSON-RPC code for a request that needs a client capability the client did not declare. */
export const MISSING_REQUIRED_CLIENT_CAPABILITY = JsonRpcErrorCodes.missingRequiredClientCapability;

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export function isTerminalTaskStatus(status: TaskStatus): boolean {
  return TERMINAL.has(status);
}

/** Whether a request's per-request capabilities declare the tasks extension. */
export function declaresTasks(params: unknown): boolean {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const capabilities = meta?.[CLIENT_CAPABILITIES_META_KEY] as
    { extensions?: Record<string, unknown> } | undefined;
  const declared = capabilities?.extensions?.[TASKS_EXTENSION];
  return typeof declared === 'object' && declared !== null;
}

/** The error for a request that needs a task (or a tasks method) from a client that cannot take one. */
export function missingTasksCapability(): {
  code: number;
  message: string;
  data: { requiredCapabilities: { extensions: Record<string, object> } };
} {
  return {
    code: MISSING_REQUIRED_CLIENT_CAPABILITY,
    message: 'Missing required client capability',
    data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
  };
}

/** What happened to a task, in log order. `atMs`: when it was recorded. */
export type TaskEvent =
  | {
      readonly kind: 'created';
      readonly atMs: number;
      readonly ttlMs: number | null;
      readonly pollIntervalMs?: number;
    }
  /** The server asks the client: requests keyed by ids unique over the task's lifetime. */
  | {
      readonly kind: 'input-required';
      readonly atMs: number;
      readonly inputRequests: Readonly<Record<string, unknown>>;
    }
  /** The client answered these keys (`tasks/update`); the rest stay outstanding. */
  | { readonly kind: 'input-answered'; readonly atMs: number; readonly keys: readonly string[] }
  /** Work goes on (a new execution after a worker died supersedes what it had asked). */
  | { readonly kind: 'working'; readonly atMs: number; readonly statusMessage?: string }
  | { readonly kind: 'completed'; readonly atMs: number; readonly result: object }
  | {
      readonly kind: 'failed';
      readonly atMs: number;
      readonly error: object;
      readonly statusMessage?: string;
    }
  | { readonly kind: 'cancelled'; readonly atMs: number; readonly statusMessage?: string };

/** A task's state: the fold of its events. */
export interface TaskState {
  readonly taskId: string;
  readonly status: TaskStatus;
  readonly createdAtMs: number;
  readonly lastUpdatedAtMs: number;
  readonly ttlMs: number | null;
  readonly pollIntervalMs?: number;
  readonly statusMessage?: string;
  /** Requests the client has not answered yet. */
  readonly outstanding: Readonly<Record<string, unknown>>;
  /** Every input-request key the task ever issued: none may be issued again. */
  readonly issuedKeys: readonly string[];
  readonly result?: object;
  readonly error?: object;
}

/** Why an event changed nothing. */
export type TaskFoldSkip =
  'before-created' | 'duplicate-created' | 'after-terminal' | 'nothing-new';

export type TaskFold =
  | { readonly applied: true; readonly state: TaskState }
  | { readonly applied: false; readonly state: TaskState | undefined; readonly why: TaskFoldSkip };

/** A task's state the moment it was created: the first fold of every reader of a task. */
export function createdTask(
  taskId: string,
  created: {
    readonly atMs: number;
    readonly ttlMs: number | null;
    readonly pollIntervalMs?: number;
  },
): TaskState {
  return foldTask(taskId, undefined, { kind: 'created', ...created }).state!;
}

/**
 * Folds one event, in log order, into a task's state. A terminal status never changes again
 * (the first terminal event wins); a key issued once is never issued again; answers for keys that
 * are not outstanding are ignored. Pure: returns a new state.
 */
export function foldTask(taskId: string, state: TaskState | undefined, event: TaskEvent): TaskFold {
  if (event.kind === 'created') {
    if (state !== undefined) return { applied: false, state, why: 'duplicate-created' };
    const created: TaskState = {
      taskId,
      status: 'working',
      createdAtMs: event.atMs,
      lastUpdatedAtMs: event.atMs,
      ttlMs: event.ttlMs,
      ...(event.pollIntervalMs === undefined ? {} : { pollIntervalMs: event.pollIntervalMs }),
      outstanding: {},
      issuedKeys: [],
    };
    return { applied: true, state: created };
  }
  if (state === undefined) return { applied: false, state, why: 'before-created' };
  if (isTerminalTaskStatus(state.status)) return { applied: false, state, why: 'after-terminal' };
  const next = transition(state, event);
  return next === undefined
    ? { applied: false, state, why: 'nothing-new' }
    : {
        applied: true,
        state: { ...next, lastUpdatedAtMs: Math.max(state.lastUpdatedAtMs, event.atMs) },
      };
}

/** The state after a non-creating event; undefined when it changes nothing. */
function transition(
  state: TaskState,
  event: Exclude<TaskEvent, { kind: 'created' }>,
): TaskState | undefined {
  const base = withoutStatusFields(state);
  switch (event.kind) {
    case 'input-required': {
      const fresh = Object.entries(event.inputRequests).filter(
        ([key]) => !state.issuedKeys.includes(key),
      );
      if (fresh.length === 0) return undefined;
      return {
        ...base,
        status: 'input_required',
        outstanding: { ...state.outstanding, ...Object.fromEntries(fresh) },
        issuedKeys: [...state.issuedKeys, ...fresh.map(([key]) => key)],
      };
    }
    case 'input-answered': {
      const answered = event.keys.filter((key) => key in state.outstanding);
      if (answered.length === 0) return undefined;
      const outstanding = Object.fromEntries(
        Object.entries(state.outstanding).filter(([key]) => !answered.includes(key)),
      );
      const status = Object.keys(outstanding).length === 0 ? 'working' : 'input_required';
      return { ...base, status, outstanding };
    }
    case 'working':
      return { ...base, status: 'working', outstanding: {}, ...message(event.statusMessage) };
    case 'completed':
      return { ...base, status: 'completed', outstanding: {}, result: event.result };
    case 'failed':
      return {
        ...base,
        status: 'failed',
        outstanding: {},
        error: event.error,
        ...message(event.statusMessage),
      };
    case 'cancelled':
      return { ...base, status: 'cancelled', outstanding: {}, ...message(event.statusMessage) };
  }
}

function withoutStatusFields(state: TaskState): TaskState {
  const { statusMessage: _message, result: _result, error: _error, ...rest } = state;
  return rest;
}

function message(statusMessage: string | undefined): { statusMessage?: string } {
  return statusMessage === undefined ? {} : { statusMessage };
}

/** Whether the task outlived its TTL (the server may then fail it, and later forget it). */
export function isTaskExpired(state: TaskState, nowMs: number): boolean {
  return state.ttlMs !== null && nowMs > state.createdAtMs + state.ttlMs;
}

/** The `Task` fields every answer carries. */
function taskFields(state: TaskState): Record<string, unknown> {
  return {
    taskId: state.taskId,
    status: state.status,
    ...message(state.statusMessage),
    createdAt: new Date(state.createdAtMs).toISOString(),
    lastUpdatedAt: new Date(state.lastUpdatedAtMs).toISOString(),
    ttlMs: state.ttlMs,
    ...(state.pollIntervalMs === undefined ? {} : { pollIntervalMs: state.pollIntervalMs }),
  };
}

/** The answer to the `tools/call` that created the task. */
export function createTaskResult(state: TaskState): Record<string, unknown> {
  return { resultType: 'task', ...taskFields(state) };
}

/**
 * The answer to `tasks/get` (and the params of `notifications/tasks`): the task with what its
 * status carries inline — the outstanding requests, the result, or the error.
 */
export function detailedTask(state: TaskState): Record<string, unknown> {
  return {
    resultType: 'complete',
    ...taskFields(state),
    ...(state.status === 'input_required' ? { inputRequests: state.outstanding } : {}),
    ...(state.status === 'completed' ? { result: state.result } : {}),
    ...(state.status === 'failed' ? { error: state.error } : {}),
  };
}

/** A tool's declared task support (`execution.taskSupport`); undeclared is `forbidden`. */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export const TASK_SUPPORTS: readonly TaskSupport[] = ['forbidden', 'optional', 'required'];

/**
 * Whether a `tools/call` becomes a task: the server decides per request, and never makes one for a
 * client that did not declare the extension on that request. A tool that requires a task, asked by
 * such a client, is refused with -32021 — unless the deployment turned tasks off (`never`), in
 * which case every tool runs as a plain call.
 */
export function taskDecision(
  mode: TaskMode,
  support: TaskSupport,
  declared: boolean,
): 'task' | 'direct' | 'refuse' {
  if (mode === 'never') return 'direct';
  if (mode === 'tool' && support === 'forbidden') return 'direct';
  if (declared) return 'task';
  return support === 'required' ? 'refuse' : 'direct';
}

// The records of a task's stream (`TASK_STREAM` under the task id), besides generation starts and
// the tool's own notifications: JSON-RPC notifications of Tidemark's, never sent to a client.
