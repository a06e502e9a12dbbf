import type { Response } from 'express';
import type { Subscription, TailListener } from '@tidemark/log';
import {
  declaresTasks,
  detailedTask,
  isTerminalTaskStatus,
  missingTasksCapability,
  parseSessionId,
  type LogRecord,
  type RequestId,
  type SessionId,
} from '@tidemark/protocol';
import type { Asker } from './access.js';
import type { GatewayContext } from './gateway-context.js';
import { readTask } from './task-state.js';

// `subscriptions/listen` with `notifications.taskIds`: `notifications/tasks` pushed to the client
// as its tasks change, each the DetailedTask `tasks/get` would answer at that moment. The gateway
// reads the tasks from the log itself (any gateway can), so a listen survives nothing but its own
// connection: a client that reconnects listens again and gets each task's current state first.
//
// A task changes by a record of its stream in `events`, so a listen watches its tasks' partitions
// through the gateway's shared tails and reads a task again only when a record under its id goes
// by — a task that waits for its user an hour costs no reads. A slow timer reads them anyway, for
// what is not a record of the stream (the task's record tombstoned, its events expired).

/** Task ids one listen may follow. */
const MAX_LISTENED_TASKS = 64;

/** How often a listen reads its tasks when no record of theirs went by. */
const REREAD_INTERVAL_MS = 5_000;

/** …and when it could not watch the tail (the records it needed are gone): as a poller would. */
const UNWATCHED_INTERVAL_MS = 250;

const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

interface ListenRequest {
  readonly id: RequestId;
  readonly params?: Record<string, unknown>;
}

/** The task ids a `subscriptions/listen` asks to follow, if it asks for any. */
export function listenedTaskIds(method: string, params: unknown): unknown[] | undefined {
  if (method !== 'subscriptions/listen') return undefined;
  const notifications = (params as { notifications?: { taskIds?: unknown } } | undefined)
    ?.notifications;
  const ids = notifications?.taskIds;
  return Array.isArray(ids) && ids.length > 0 ? ids : undefined;
}

export async function handleTaskListen(
  ctx: GatewayContext,
  res: Response,
  request: ListenRequest,
  requested: readonly unknown[],
  asker: Asker,
): Promise<void> {
  const refuse = (error: unknown) =>
    void res.status(200).json({ jsonrpc: '2.0', id: request.id, error });
  if (!declaresTasks(request.params)) return refuse(missingTasksCapability());
  if (requested.length > MAX_LISTENED_TASKS)
    return refuse({
      code: -32602,
      message: `Invalid params: at most ${MAX_LISTENED_TASKS} taskIds per subscriptions/listen`,
    });
  // Only the subject's own tasks are agreed to; the rest are left out, as unknown ones are.
  const agreed: SessionId[] = [];
  for (const raw of requested) {
    const id = typeof raw === 'string' ? parseSessionId(raw) : undefined;
    if (
      id !== undefined &&
      !agreed.includes(id) &&
      (await readTask(ctx, id, asker.auth?.subject)).found
    )
      agreed.push(id);
  }
  const meta = { [SUBSCRIPTION_ID_META_KEY]: request.id };
  const sse = ctx.streams.open(res, undefined, asker.share);
  sse.event(undefined, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: agreed }, _meta: meta },
  });
  const sent = new Map<SessionId, string>();
  const pending = new Set(agreed);
  const changes = await TaskChanges.watch(ctx, agreed);
  try {
    while (sse.isOpen && pending.size > 0) {
      changes.clear(); // a record that goes by from here on means another read
      for (const id of pending) {
        const task = await readTask(ctx, id, asker.auth?.subject);
        if (!task.found) {
          pending.delete(id);
          continue;
        }
        const { resultType: _complete, ...params } = detailedTask(task.state);
        const body = JSON.stringify(params);
        if (sent.get(id) !== body) {
          sent.set(id, body);
          sse.event(undefined, {
            jsonrpc: '2.0',
            method: 'notifications/tasks',
            params: { ...params, _meta: meta },
          });
        }
        if (isTerminalTaskStatus(task.state.status)) pending.delete(id);
      }
      if (pending.size > 0) await changes.next(sse.closed);
    }
  } finally {
    changes.close();
  }
  // Every task it followed is finished (or gone): the subscription ends gracefully.
  if (sse.isOpen) {
    sse.event(undefined, { jsonrpc: '2.0', id: request.id, result: { _meta: meta } });
    sse.end();
  }
}

/**
 * Records of some tasks' streams going by on the gateway's tails of `events`, from the high
 * watermarks of the moment it starts watching (before the first read, so no change falls between).
 */
class TaskChanges implements TailListener {
  private changed = false;
  private unwatched = false;
  private wake: (() => void) | undefined;
  private readonly subscriptions: Subscription[] = [];

  private constructor(private readonly ids: ReadonlySet<string>) {}

  static async watch(ctx: GatewayContext, ids: readonly SessionId[]): Promise<TaskChanges> {
    const changes = new TaskChanges(new Set(ids));
    const partitions = new Set(ids.map((id) => ctx.heads.partitionOf(id)));
    try {
      for (const partition of partitions) {
        const { highWatermark } = await ctx.eventOffsets.read(partition);
        changes.subscriptions.push(
          ctx.tails.tail(partition).subscribe(highWatermark, changes, highWatermark),
        );
      }
    } catch (error) {
      changes.close(); // the log could not say where its tails are: nothing is left subscribed
      throw error;
    }
    return changes;
  }

  onRecords(records: readonly LogRecord[]): void {
    if (records.some((record) => record.key !== null && this.ids.has(record.key))) this.notify();
  }

  onError(): void {
    this.unwatched = true;
    this.notify();
  }

  clear(): void {
    this.changed = false;
  }

  /** Resolves when a record of a task went by since `clear`, at the re-read interval, or on `closed`. */
  async next(closed: Promise<void>): Promise<void> {
    if (this.changed) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      closed,
      new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(resolve, this.unwatched ? UNWATCHED_INTERVAL_MS : REREAD_INTERVAL_MS);
      }),
    ]);
    clearTimeout(timer);
    this.wake = undefined;
  }

  close(): void {
    for (const subscription of this.subscriptions) subscription.close();
  }

  private notify(): void {
    this.changed = true;
    this.wake?.();
  }
}
