import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createTaskResult,
  declaresTasks,
  detailedTask,
  foldTask,
  isTaskExpired,
  isTerminalTaskStatus,
  missingTasksCapability,
  TASKS_EXTENSION,
  TASK_ANSWERED_METHOD,
  TASK_CANCELLED_METHOD,
  TASK_INPUT_METHOD,
  taskDecision,
  taskEventOf,
  type TaskEvent,
  type TaskState,
} from '../src/index.js';

const ID = 'task-0123456789abcdefghij';
const T0 = Date.UTC(2026, 10, 30, 10, 0, 0);

function fold(events: readonly TaskEvent[]): TaskState | undefined {
  let state: TaskState | undefined;
  for (const event of events) state = foldTask(ID, state, event).state;
  return state;
}

const created: TaskEvent = { kind: 'created', atMs: T0, ttlMs: 60_000, pollIntervalMs: 500 };
const ask = (atMs: number, ...keys: string[]): TaskEvent => ({
  kind: 'input-required',
  atMs,
  inputRequests: Object.fromEntries(keys.map((key) => [key, { method: 'elicitation/create' }])),
});

describe('who gets a task', () => {
  it('only a request that declares the extension in its per-request capabilities', () => {
    const meta = (extensions: unknown) => ({
      _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions } },
    });
    expect(declaresTasks(meta({ [TASKS_EXTENSION]: {} }))).toBe(true);
    expect(declaresTasks(meta({}))).toBe(false);
    expect(declaresTasks(meta({ [TASKS_EXTENSION]: true }))).toBe(false);
    expect(declaresTasks({})).toBe(false);
    expect(declaresTasks(undefined)).toBe(false);
    expect(missingTasksCapability()).toEqual({
      code: -32021,
      message: 'Missing required client capability',
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    });
  });
});

describe('a task is the fold of what happened to it', () => {
  it('working → input_required ⇄ working → completed, with the answers the spec shapes', () => {
    const asking = fold([created, ask(T0 + 10, 'name')])!;
    expect(detailedTask(asking)).toEqual({
      resultType: 'complete',
      taskId: ID,
      status: 'input_required',
      createdAt: '2026-11-30T10:00:00.000Z',
      lastUpdatedAt: '2026-11-30T10:00:00.010Z',
      ttlMs: 60_000,
      pollIntervalMs: 500,
      inputRequests: { name: { method: 'elicitation/create' } },
    });
    const done = fold([
      created,
      ask(T0 + 10, 'name'),
      { kind: 'input-answered', atMs: T0 + 20, keys: ['name'] },
      { kind: 'completed', atMs: T0 + 30, result: { content: [], isError: true } },
    ])!;
    expect(detailedTask(done)).toMatchObject({
      status: 'completed',
      result: { content: [], isError: true },
    });
    expect(detailedTask(done)).not.toHaveProperty('inputRequests');
    expect(createTaskResult(fold([created])!)).toEqual({
      resultType: 'task',
      taskId: ID,
      status: 'working',
      createdAt: '2026-11-30T10:00:00.000Z',
      lastUpdatedAt: '2026-11-30T10:00:00.000Z',
      ttlMs: 60_000,
      pollIntervalMs: 500,
    });
  });

  it('a partial answer leaves the task waiting for the rest; answers to unknown keys change nothing', () => {
    const partial = fold([
      created,
      ask(T0 + 1, 'a', 'b'),
      { kind: 'input-answered', atMs: T0 + 2, keys: ['a', 'never-issued'] },
    ])!;
    expect(partial.status).toBe('input_required');
    expect(Object.keys(partial.outstanding)).toEqual(['b']);
    const stray = foldTask(ID, partial, { kind: 'input-answered', atMs: T0 + 3, keys: ['a'] });
    expect(stray).toMatchObject({ applied: false, why: 'nothing-new' });
  });

  it('a key is never issued twice, and a failed task carries its JSON-RPC error', () => {
    const state = fold([
      created,
      ask(T0 + 1, 'k'),
      { kind: 'input-answered', atMs: T0 + 2, keys: ['k'] },
    ])!;
    expect(foldTask(ID, state, ask(T0 + 3, 'k'))).toMatchObject({ applied: false });
    const failed = fold([
      created,
      {
        kind: 'failed',
        atMs: T0 + 5,
        error: { code: -32603, message: 'boom' },
        statusMessage: 'x',
      },
    ])!;
    expect(detailedTask(failed)).toMatchObject({
      status: 'failed',
      statusMessage: 'x',
      error: { code: -32603, message: 'boom' },
    });
  });

  it('nothing happens to a task before it is created, or twice created', () => {
    expect(foldTask(ID, undefined, { kind: 'working', atMs: T0 })).toMatchObject({
      applied: false,
      why: 'before-created',
    });
    expect(foldTask(ID, fold([created]), created)).toMatchObject({
      applied: false,
      why: 'duplicate-created',
    });
  });

  it('expires after its TTL; a null TTL never does', () => {
    const state = fold([created])!;
    expect(isTaskExpired(state, T0 + 60_000)).toBe(false);
    expect(isTaskExpired(state, T0 + 60_001)).toBe(true);
    const unlimited = fold([{ kind: 'created', atMs: T0, ttlMs: null }])!;
    expect(isTaskExpired(unlimited, T0 + 10 ** 12)).toBe(false);
  });
});

describe('the fold under any order of events', () => {
  const event = fc.oneof(
    fc.record({
      kind: fc.constant('created' as const),
      atMs: fc.integer({ min: 0, max: 100 }),
      ttlMs: fc.constantFrom(null, 1_000),
    }),
    fc.record({
      kind: fc.constant('input-required' as const),
      atMs: fc.integer({ min: 0, max: 100 }),
      inputRequests: fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.constant({ method: 'x' })),
    }),
    fc.record({
      kind: fc.constant('input-answered' as const),
      atMs: fc.integer({ min: 0, max: 100 }),
      keys: fc.array(fc.constantFrom('a', 'b', 'c')),
    }),
    fc.record({ kind: fc.constant('working' as const), atMs: fc.integer({ min: 0, max: 100 }) }),
    fc.record({
      kind: fc.constant('completed' as const),
      atMs: fc.integer({ min: 0, max: 100 }),
      result: fc.constant({ content: [] }),
    }),
    fc.record({
      kind: fc.constant('failed' as const),
      atMs: fc.integer({ min: 0, max: 100 }),
      error: fc.constant({ code: -32603, message: 'x' }),
    }),
    fc.record({ kind: fc.constant('cancelled' as const), atMs: fc.integer({ min: 0, max: 100 }) }),
  ) as fc.Arbitrary<TaskEvent>;

  it('never leaves a terminal status, never reissues a key, never moves lastUpdatedAt back', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let state: TaskState | undefined;
        for (const e of events) {
          const next = foldTask(ID, state, e).state;
          if (state !== undefined && next !== undefined) {
            if (isTerminalTaskStatus(state.status)) expect(next).toBe(state);
            expect(next.lastUpdatedAtMs).toBeGreaterThanOrEqual(state.lastUpdatedAtMs);
            expect(new Set(next.issuedKeys).size).toBe(next.issuedKeys.length);
            expect(next.status === 'input_required').toBe(Object.keys(next.outstanding).length > 0);
          }
          state = next;
        }
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('when a call becomes a task', () => {
  it('follows the mode, the tool, and what the client declared on this request', () => {
    expect(taskDecision('never', 'required', true)).toBe('direct');
    expect(taskDecision('tool', 'forbidden', true)).toBe('direct');
    expect(taskDecision('tool', 'optional', true)).toBe('task');
    expect(taskDecision('tool', 'optional', false)).toBe('direct');
    expect(taskDecision('tool', 'required', false)).toBe('refuse');
    expect(taskDecision('always', 'forbidden', true)).toBe('task');
    expect(taskDecision('always', 'forbidden', false)).toBe('direct');
  });
});

describe('the records of a task stream', () => {
  const at = { atMs: T0 };
  it('read as task events: executions, input, outcome; the rest changes nothing', () => {
    expect(taskEventOf({ kind: 'generation-start', attempt: 1, ...at })).toBeUndefined();
    expect(taskEventOf({ kind: 'generation-start', attempt: 2, ...at })?.kind).toBe('working');
    const inputRequests = { '1.1.confirm': { method: 'elicitation/create', params: {} } };
    expect(
      taskEventOf({
        kind: 'message',
        attempt: 1,
        payload: { jsonrpc: '2.0', method: TASK_INPUT_METHOD, params: { inputRequests } },
        ...at,
      }),
    ).toEqual({ kind: 'input-required', inputRequests, ...at });
    expect(
      taskEventOf({
        kind: 'message',
        attempt: 1,
        payload: { jsonrpc: '2.0', method: TASK_ANSWERED_METHOD, params: { keys: ['a', 3] } },
        ...at,
      }),
    ).toEqual({ kind: 'input-answered', keys: ['a'], ...at });
    expect(
      taskEventOf({
        kind: 'message',
        attempt: 1,
        payload: { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } },
        ...at,
      }),
    ).toBeUndefined();
    const result = { content: [{ type: 'text', text: 'done' }] };
    expect(
      taskEventOf({
        kind: 'terminal',
        attempt: 1,
        payload: { jsonrpc: '2.0', id: 1, result },
        ...at,
      }),
    ).toEqual({ kind: 'completed', result, ...at });
    const error = { code: -32602, message: 'bad' };
    expect(
      taskEventOf({
        kind: 'terminal',
        attempt: 1,
        payload: { jsonrpc: '2.0', id: 1, error },
        ...at,
      }),
    ).toEqual({ kind: 'failed', error, statusMessage: 'bad', ...at });
    expect(
      taskEventOf({
        kind: 'terminal',
        attempt: 1,
        payload: { jsonrpc: '2.0', method: TASK_CANCELLED_METHOD, params: { statusMessage: 'x' } },
        ...at,
      }),
    ).toEqual({ kind: 'cancelled', statusMessage: 'x', ...at });
    expect(taskEventOf({ kind: 'terminal', attempt: 1, ...at })?.kind).toBe('failed');
  });
});
