import { setTimeout as sleep } from 'node:timers/promises';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { TaskView } from './task-view.js';
import type { StatelessTransport } from './transport.js';

/**
 * How a client learns that a task changed: `poll` asks `tasks/get` at the task's `pollIntervalMs`;
 * `listen` keeps one `subscriptions/listen` stream open and is told (`notifications/tasks`).
 */
export type FollowMode = 'poll' | 'listen';

export interface Follow {
  readonly transport: StatelessTransport;
  /** Floor of the wait between two `tasks/get`, whatever the server suggests. */
  readonly minIntervalMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** The task's current state (`tasks/get`). */
export async function getTask(
  transport: StatelessTransport,
  taskId: string,
  signal?: AbortSignal,
): Promise<TaskView> {
  return (await transport.request('tasks/get', { taskId }, taskId, signal)) as unknown as TaskView;
}

/** The states of a task after `first`, read with `tasks/get` at its poll interval. */
export async function* polled(follow: Follow, first: TaskView): AsyncGenerator<TaskView> {
  for (let view = first; ;) {
    await pause(follow, view);
    view = await getTask(follow.transport, view.taskId, follow.signal);
    yield view;
  }
}

/**
 * The states of a task as a `subscriptions/listen` stream pushes them (each listen starts with the
 * task's current state). A stream that ends or drops while the task runs — a gateway restarting, a
 * balancer's idle cut — is followed by one `tasks/get` and a new listen, a poll interval later, so a
 * gateway that keeps ending listens costs no more than polling. A server that answers the listen
 * without a stream (it has no listen) is polled instead.
 */
export async function* listened(follow: Follow, first: TaskView): AsyncGenerator<TaskView> {
  for (let view = first; ;) {
    const stream = new AbortController();
    const signal =
      follow.signal === undefined ? stream.signal : AbortSignal.any([follow.signal, stream.signal]);
    let streamed = true;
    try {
      const response = await follow.transport.post(
        'subscriptions/listen',
        { notifications: { taskIds: [view.taskId] } },
        view.taskId,
        signal,
      );
      const type = response.headers.get('content-type') ?? '';
      if (response.body !== null && type.startsWith('text/event-stream'))
        for await (const update of taskUpdates(response.body, view.taskId)) yield (view = update);
      else {
        streamed = false;
        await response.body?.cancel();
      }
    } catch (error) {
      if (follow.signal?.aborted) throw error;
      // The stream dropped: the task is read and listened to again below.
    } finally {
      stream.abort();
    }
    if (!streamed) {
      yield* polled(follow, view);
      return;
    }
    await pause(follow, view);
    view = await getTask(follow.transport, view.taskId, follow.signal);
    yield view;
  }
}

/** The `notifications/tasks` of one task in an SSE body, as the DetailedTask each carries. */
async function* taskUpdates(
  body: ReadableStream<Uint8Array>,
  taskId: string,
): AsyncGenerator<TaskView> {
  const events = body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream());
  for await (const event of events) {
    let message: { method?: unknown; params?: { taskId?: unknown; _meta?: unknown } };
    try {
      message = JSON.parse(event.data) as typeof message;
    } catch {
      continue; // not JSON-RPC: nothing this client follows
    }
    if (message.method !== 'notifications/tasks' || message.params?.taskId !== taskId) continue;
    const { _meta: _subscription, ...task } = message.params;
    yield task as unknown as TaskView;
  }
}

const pause = (follow: Follow, view: TaskView) =>
  sleep(
    Math.max(follow.minIntervalMs, view.pollIntervalMs ?? 0),
    undefined,
    follow.signal ? { signal: follow.signal } : undefined,
  );
