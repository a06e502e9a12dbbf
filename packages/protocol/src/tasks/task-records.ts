import { JsonRpcErrorCodes } from '../wire/wire.js';
import type { TaskEvent, TaskState, TaskStatus } from './tasks.js';

// How a task lives in the log: the notifications a task's worker and its gateways write on the
// task's stream, and what each record of that stream means for the task's state.

/** The task asks the client: `params.inputRequests`, keys already unique over the task's life. */
export const TASK_INPUT_METHOD = 'notifications/tidemark/task-input';
/** The task received answers to these keys (`params.keys`) and works on. */
export const TASK_ANSWERED_METHOD = 'notifications/tidemark/task-answered';
/** The terminal record of a cancelled task (`params.statusMessage`). */
export const TASK_CANCELLED_METHOD = 'notifications/tidemark/task-cancelled';
/** A task's event stream, replayable (SEP-2694's shape): `{ taskId, after? }`. */
export const TASK_STREAM_METHOD = 'tasks/stream';
/** One event of `tasks/stream`: `{ taskId, seq, type, data }`. */
export const TASK_EVENT_NOTIFICATION = 'notifications/tasks/event';
/** A gateway passing a client's `tasks/update` to the task's worker (`params.inputResponses`). */
export const TASK_UPDATE_METHOD = 'notifications/tidemark/task-update';
/** A gateway passing a client's `tasks/cancel` to the task's worker. */
export const TASK_CANCEL_METHOD = 'notifications/tidemark/task-cancel';

const TASK_STATUSES: readonly TaskStatus[] = [
  'working',
  'input_required',
  'completed',
  'failed',
  'cancelled',
];

/**
 * A task's status as its worker keeps it in the task stream's head (`StreamHead.snapshot`), or
 * undefined for a head without one (written before snapshots) or one that is not this task's.
 */
export function taskSnapshotOf(value: unknown, taskId: string): TaskState | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const state = value as Partial<TaskState>;
  if (
    state.taskId !== taskId ||
    !TASK_STATUSES.includes(state.status as TaskStatus) ||
    typeof state.createdAtMs !== 'number' ||
    typeof state.lastUpdatedAtMs !== 'number' ||
    typeof state.outstanding !== 'object' ||
    state.outstanding === null ||
    !Array.isArray(state.issuedKeys)
  )
    return undefined;
  return state as TaskState;
}

/** One record of a task's stream, as far as the task's status is concerned. */
export interface TaskStreamRecord {
  readonly kind: 'generation-start' | 'message' | 'terminal';
  /** The generation's attempt (1 for the first execution). */
  readonly attempt: number;
  readonly payload?: unknown;
  readonly atMs: number;
}

/**
 * What a record of a task's stream means for the task, if anything: a later generation is a new
 * execution (`working`, superseding what the earlier one asked), Tidemark's task notifications
 * are input asked and answered, and the terminal record is the outcome. Progress and log messages
 * of the tool change nothing (the extension sends neither to task clients).
 */
export function taskEventOf(record: TaskStreamRecord): TaskEvent | undefined {
  const { kind, atMs } = record;
  const payload = (record.payload ?? {}) as {
    method?: unknown;
    params?: Record<string, unknown>;
    result?: unknown;
    error?: unknown;
  };
  if (kind === 'generation-start')
    return record.attempt > 1
      ? { kind: 'working', atMs, statusMessage: 'The task runs again (a new execution).' }
      : undefined;
  if (kind === 'terminal') {
    if (payload.method === TASK_CANCELLED_METHOD)
      return { kind: 'cancelled', atMs, ...statusOf(payload.params?.['statusMessage']) };
    if (isObject(payload.result)) return { kind: 'completed', atMs, result: payload.result };
    const error = isObject(payload.error)
      ? payload.error
      : { code: JsonRpcErrorCodes.internalError, message: 'The task ended without a result' };
    return { kind: 'failed', atMs, error, ...statusOf((error as { message?: unknown }).message) };
  }
  if (payload.method === TASK_INPUT_METHOD && isObject(payload.params?.['inputRequests']))
    return {
      kind: 'input-required',
      atMs,
      inputRequests: payload.params['inputRequests'] as Record<string, unknown>,
    };
  if (payload.method === TASK_ANSWERED_METHOD && Array.isArray(payload.params?.['keys']))
    return {
      kind: 'input-answered',
      atMs,
      keys: (payload.params['keys'] as unknown[]).filter((k): k is string => typeof k === 'string'),
    };
  return undefined;
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function statusOf(value: unknown): { statusMessage?: string } {
  return typeof value === 'string' ? { statusMessage: value } : {};
}
