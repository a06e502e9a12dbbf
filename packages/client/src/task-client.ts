import { TaskCancelledError, TaskFailedError, TaskInputError } from './errors.js';
import { getTask, listened, polled, type FollowMode } from './task-follow.js';
import { MemoryTaskStore, type StoredTask, type TaskStore } from './task-store.js';
import type { TaskView, ToolResult } from './task-view.js';
import { StatelessTransport } from './transport.js';

export interface TaskClientOptions {
  /** The MCP endpoint (any replica, or the load balancer in front of them). */
  readonly url: string | URL;
  readonly clientInfo?: { readonly name: string; readonly version: string };
  /** Headers for every request (e.g. `Authorization`); a function is called each time. */
  readonly headers?: Record<string, string> | (() => Record<string, string>);
  /**
   * Where unfinished task ids are kept.
   * @default in memory
   */
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
  /**
   * How a task's changes are learned: `'poll'` (default) asks `tasks/get` at the task's
   * `pollIntervalMs`; `'listen'` keeps a `subscriptions/listen` stream open and is told at once —
   * fewer requests and less delay, one open connection per awaited task (a dropped stream is read
   * with `tasks/get` and listened to again; a server without listen is polled).
   */
  readonly follow?: FollowMode;
  /**
   * Floor of the polling interval, whatever the server suggests.
   * @default 100 ms
   */
  readonly minPollIntervalMs?: number;
  /**
   * How long a gateway may be unreachable (restart, failover) before waiting fails.
   * @default 60 s
   */
  readonly unavailableForMs?: number;
  readonly fetch?: typeof fetch;
}

/**
 * A 2026-07-28 client for durable tools: `callTool` declares the Tasks extension, and when the
 * server answers with a task it waits for it — polling `tasks/get` at the task's `pollIntervalMs`
 * (or listening), answering its input requests through `tasks/update`, riding out gateway
 * restarts — and resolves with the tool's result as if the call had been synchronous. Task ids
 * are kept in the `store` until the task ends, so a restarted host follows them again with
 * `resumePending`.
 *
 * (The official TypeScript SDK 2.4 has no Tasks extension and refuses `tasks/*` toward
 * 2026-07-28 servers; this client speaks the few requests it needs itself.)
 */
export class TaskClient {
  private readonly store: TaskStore;
  private readonly transport: StatelessTransport;

  constructor(private readonly options: TaskClientOptions) {
    if (options.follow !== undefined && options.follow !== 'poll' && options.follow !== 'listen')
      throw new TypeError(`follow must be 'poll' or 'listen', not ${String(options.follow)}`);
    this.store = options.store ?? new MemoryTaskStore();
    this.transport = new StatelessTransport({
      url: options.url,
      elicitation: options.answerInput !== undefined,
      ...(options.clientInfo && { clientInfo: options.clientInfo }),
      ...(options.headers && { headers: options.headers }),
      ...(options.unavailableForMs !== undefined && { unavailableForMs: options.unavailableForMs }),
      ...(options.fetch && { fetch: options.fetch }),
    });
  }

  /**
   * Calls a tool; a task is awaited to its end. Rejects with the task's failure or cancellation.
   * The call carries an idempotency key — `idempotencyKey`, else a fresh one — so asking again
   * after a lost answer never runs the tool twice; pass your own to make that hold across
   * restarts of your host (the same key with other arguments is refused).
   */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    { signal, idempotencyKey }: { signal?: AbortSignal; idempotencyKey?: string } = {},
  ): Promise<ToolResult> {
    const result = await this.transport.request(
      'tools/call',
      { name, arguments: args },
      name,
      signal,
      idempotencyKey,
    );
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
    const first = typeof task === 'string' ? await this.get(task, signal) : task;
    const follow = {
      transport: this.transport,
      minIntervalMs: this.options.minPollIntervalMs ?? 100,
      signal,
    };
    const later =
      this.options.follow === 'listen' ? listened(follow, first) : polled(follow, first);
    try {
      return await this.settle(first, later, signal);
    } finally {
      await later.return(undefined); // a listen stream still open is closed
    }
  }

  /** Takes a task's states as they come until it ends: its result, or its failure thrown. */
  private async settle(
    first: TaskView,
    later: AsyncGenerator<TaskView>,
    signal: AbortSignal | undefined,
  ): Promise<ToolResult> {
    const answered = new Set<string>();
    for (let view = first; ;) {
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
      const next = await later.next();
      if (next.done === true) throw new Error('unreachable: a task is followed until it ends');
      view = next.value;
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
    return getTask(this.transport, taskId, signal);
  }

  /** Asks the server to cancel the task (`tasks/cancel`); the task's end says whether it did. */
  async cancel(taskId: string): Promise<void> {
    await this.transport.request('tasks/cancel', { taskId }, taskId);
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
      await this.transport.request(
        'tasks/update',
        { taskId: view.taskId, inputResponses: known },
        view.taskId,
        signal,
      );
  }
}
