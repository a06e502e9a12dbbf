import { setTimeout as sleep } from 'node:timers/promises';
import { McpRequestError, TaskCancelledError, TaskFailedError, TaskInputError } from './errors.js';
import { answerInBody, statelessRequest, TASKS_EXTENSION } from '@tidemark/protocol';
import { MemoryTaskStore, type StoredTask, type TaskStore } from './task-store.js';

/** What a tool call answers: the SDK's `CallToolResult` shape, as JSON. */
export type ToolResult = Record<string, unknown> & { content?: unknown[]; isError?: boolean };

/** A task as `tasks/get` reports it (the extension's DetailedTask). */
export interface TaskView {
  readonly taskId: string;
  readonly status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  readonly statusMessage?: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ttlMs: number | null;
  readonly pollIntervalMs?: number;
  readonly inputRequests?: Record<string, unknown>;
  readonly result?: ToolResult;
  readonly error?: { code?: unknown; message?: unknown; data?: unknown };
}

export interface TaskClientOptions {
  /** The MCP endpoint (any replica, or the load balancer in front of them). */
  readonly url: string | URL;
  readonly clientInfo?: { readonly name: string; readonly version: string };
  /** Headers for every request (e.g. `Authorization`); a function is called each time. */
  readonly headers?: Record<string, string> | (() => Record<string, string>);
  /** Where unfinished task ids are kept. Default: in memory. */
  readonly store?: TaskStore;
  /**
   * Answers a task's `inputRequests` (elicitations, sampling…): resolves with a response per key
   * (MRTR shapes). Called once per key; without it a task that asks fails with `TaskInputError`.
   * Declaring it declares the `elicitation` capability.
   */
  readonly answerInput?: (
    inputRequests: Readonly<Record<string, unknown>>,
    task: TaskView,
  ) => Promise<Record<string, unknown>>;
  /** Sees each status a task reports, for a progress display. */
  readonly onStatus?: (task: TaskView) => void;
  /** Floor of the polling interval, whatever the server suggests. Default 100 ms. */
  readonly minPollIntervalMs?: number;
  /** How long a gateway may be unreachable (restart, failover) before waiting fails. Default 60 s. */
  readonly unavailableForMs?: number;
  readonly fetch?: typeof fetch;
}

/**
 * A 2026-07-28 client for durable tools: `callTool` declares the Tasks extension, and when the
 * server answers with a task it waits for it — polling `tasks/get` at the task's `pollIntervalMs`,
 * answering its input requests through `tasks/update`, riding out gateway restarts — and resolves
 * with the tool's result as if the call had been synchronous. Task ids are kept in the `store`
 * until the task ends, so a restarted host follows them again with `resumePending`.
 *
 * (The official TypeScript SDK 2.4 has no Tasks extension and refuses `tasks/*` toward
 * 2026-07-28 servers; this client speaks the few requests it needs itself.)
 */
export class TaskClient {
  private readonly store: TaskStore;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: TaskClientOptions) {
    this.store = options.store ?? new MemoryTaskStore();
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** Calls a tool; a task is awaited to its end. Rejects with the task's failure or cancellation. */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    { signal }: { signal?: AbortSignal } = {},
  ): Promise<ToolResult> {
    const result = await this.request('tools/call', { name, arguments: args }, name, signal);
    if (result['resultType'] !== 'task') return result;
    const task = result as unknown as TaskView;
    await this.store.put({
      taskId: task.taskId,
      url: String(this.options.url),
      tool: name,
      createdAt: task.createdAt,
    });
    return this.await(task, signal);
  }

  /** Waits for a task this client (or an earlier run of it, through the store) created. */
  async await(task: TaskView | string, signal?: AbortSignal): Promise<ToolResult> {
    let view = typeof task === 'string' ? await this.get(task, signal) : task;
    const answered = new Set<string>();
    for (;;) {
      this.options.onStatus?.(view);
      switch (view.status) {
        case 'completed':
          await this.store.delete(view.taskId);
          return view.result ?? {};
        case 'failed':
          await this.store.delete(view.taskId);
          throw new TaskFailedError(view.taskId, view.error ?? {});
        case 'cancelled':
          await this.store.delete(view.taskId);
          throw new TaskCancelledError(view.taskId);
        case 'input_required':
          await this.answer(view, answered, signal);
          break;
        case 'working':
          break;
      }
      const interval = Math.max(this.options.minPollIntervalMs ?? 100, view.pollIntervalMs ?? 0);
      await sleep(interval, undefined, signal ? { signal } : undefined);
      view = await this.get(view.taskId, signal);
    }
  }

  /** Follows every task the store still holds (after a restart); settles each as `await` does. */
  async resumePending(): Promise<Array<PromiseSettledResult<ToolResult> & { task: StoredTask }>> {
    const tasks = await this.store.list();
    const settled = await Promise.allSettled(tasks.map((task) => this.await(task.taskId)));
    return settled.map((outcome, i) => ({ ...outcome, task: tasks[i]! }));
  }

  /** The task's current state (`tasks/get`). */
  async get(taskId: string, signal?: AbortSignal): Promise<TaskView> {
    return (await this.request('tasks/get', { taskId }, taskId, signal)) as unknown as TaskView;
  }

  /** Asks the server to cancel the task (`tasks/cancel`); the task's end says whether it did. */
  async cancel(taskId: string): Promise<void> {
    await this.request('tasks/cancel', { taskId }, taskId);
  }

  private async answer(view: TaskView, answered: Set<string>, signal?: AbortSignal): Promise<void> {
    const open = Object.fromEntries(
      Object.entries(view.inputRequests ?? {}).filter(([key]) => !answered.has(key)),
    );
    if (Object.keys(open).length === 0) return;
    if (this.options.answerInput === undefined) throw new TaskInputError(view.taskId, open);
    const responses = await this.options.answerInput(open, view);
    const known = Object.fromEntries(Object.entries(responses).filter(([key]) => key in open));
    for (const key of Object.keys(known)) answered.add(key);
    if (Object.keys(known).length > 0)
      await this.request(
        'tasks/update',
        { taskId: view.taskId, inputResponses: known },
        view.taskId,
        signal,
      );
  }

  /**
   * One JSON-RPC request of the stateless lane; resolves with its result. A gateway that cannot be
   * reached or answers 5xx (a restart, a failover) is tried again until `unavailableForMs`.
   */
  private async request(
    method: string,
    params: Record<string, unknown>,
    name: string,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + (this.options.unavailableForMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      const { headers, body } = statelessRequest(method, params, {
        clientInfo: this.options.clientInfo ?? { name: '@tidemark/client', version: '0.1.0' },
        capabilities: {
          extensions: { [TASKS_EXTENSION]: {} },
          ...(this.options.answerInput === undefined ? {} : { elicitation: { form: {} } }),
        },
        name,
      });
      const extra =
        typeof this.options.headers === 'function' ? this.options.headers() : this.options.headers;
      let response: Response;
      try {
        response = await this.fetch(this.options.url, {
          method: 'POST',
          headers: { ...headers, ...extra },
          body,
          ...(signal ? { signal } : {}),
        });
      } catch (error) {
        if (signal?.aborted || Date.now() > deadline) throw error;
        await sleep(Math.min(2_000, 100 * 2 ** attempt));
        continue;
      }
      if (response.status >= 500 && Date.now() <= deadline) {
        await response.body?.cancel();
        await sleep(Math.min(2_000, 100 * 2 ** attempt));
        continue;
      }
      return answerOf(await response.text(), response.status);
    }
  }
}

/** The result of a JSON or SSE answer body, or its JSON-RPC error thrown. */
function answerOf(text: string, status: number): Record<string, unknown> {
  const answer = answerInBody(text);
  if (answer === undefined) throw new McpRequestError(-32603, `no answer (HTTP ${status})`);
  if ('error' in answer) {
    const { code, message, data } = answer.error;
    throw new McpRequestError(
      typeof code === 'number' ? code : -32603,
      typeof message === 'string' ? message : `HTTP ${status}`,
      data,
    );
  }
  return answer.result;
}
