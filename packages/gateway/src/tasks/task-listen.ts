import type { Response } from 'express';
import type { Subscription, TailListener } from '@tidemark/log';
import {
  declaresTasks,
  detailedTask,
  isTerminalTaskStatus,
  JsonRpcErrorCodes,
  MetaKeys,
  missingTasksCapability,
  parseTaskId,
  readStampedRecord,
  TASK_STREAM,
  taskEventOf,
  type LogRecord,
  type RequestId,
  type TaskId,
} from '@tidemark/protocol';
import type { Asker } from '../auth/index.js';
import type { GatewayContext } from '../gateway-context.js';
import { readTask } from './task-state.js';

// `subscriptions/listen` with `notifications.taskIds`: `notifications/tasks` pushed to the client
// as its tasks change, each the DetailedTask `tasks/get` would answer at that moment. The gateway
// reads the tasks from the log itself (any gateway can), so a listen survives nothing but its own
// connection: a client that reconnects listens again and gets each task's current state first.
//
// A task changes by a record of its stream in `events`, so a listen watches its tasks' partitions
// through the gateway's shared tails and reads a task again only when a record under its id goes
// by — a task that waits for its user an hour costs no reads, and a record of one task does not
// make the listen read the others. A read is of the task's head, which its worker writes just after
// each record that changes the status: a record seen before its head is read again shortly. A slow
// timer reads them anyway, for what is not a record of the stream (the task's record tombstoned,
// its events expired).

/** Task ids one listen may follow. */
const MAX_LISTENED_TASKS = 64;

/** How often a listen reads its tasks when no record of theirs went by. */
const REREAD_INTERVAL_MS = 5_000;

/** …and when it could not watch the tail (the records it needed are gone): as a poller would. */
const UNWATCHED_INTERVAL_MS = 250;

/** A record went by before the head holding it: the worker writes that head just after. */
const HEAD_LAG_RETRY_MS = 25;

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
      code: JsonRpcErrorCodes.invalidParams,
      message: `Invalid params: at most ${MAX_LISTENED_TASKS} taskIds per subscriptions/listen`,
    });
  // Only the subject's own tasks are agreed to; the rest are left out, as unknown ones are.
  const agreed: TaskId[] = [];
  for (const raw of requested) {
    const id = typeof raw === 'string' ? parseTaskId(raw) : undefined;
    if (
      id !== undefined &&
      !agreed.includes(id) &&
      (await readTask(ctx, id, asker.auth?.subject)).found
    )
      agreed.push(id);
  }
  const meta = { [MetaKeys.subscriptionId]: request.id };
  const sse = ctx.streams.open(res, undefined, asker.share);
  sse.event(undefined, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: agreed }, _meta: meta },
  });
  const sent = new Map<TaskId, string>();
  const pending = new Set(agreed);
  const changes = await TaskChanges.watch(ctx, agreed);
  try {
    // Each round reads only the tasks a record went by for (all of them at first and on the timer).
    let changed: Iterable<TaskId> = agreed;
    while (sse.isOpen && pending.size > 0) {
      for (const id of changed) {
        if (!pending.has(id)) continue;
        const task = await readTask(ctx, id, asker.auth?.subject);
        if (!task.found) {
          pending.delete(id);
          continue;
        }
        // The record went by before its worker wrote the head that holds it: read again shortly.
        changes.readUpTo(id, task.position);
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
      if (pending.size > 0) changed = await changes.next(sse.closed, pending);
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
 * watermarks of the moment it starts watching (before the first read, so no change falls between):
 * which tasks changed, and how far into the log their status-changing records go.
 */
class TaskChanges implements TailListener {
  private readonly changed = new Set<TaskId>();
  /** Task id → the offset after its latest record that changes its status. */
  private readonly recordedUpTo = new Map<TaskId, bigint>();
  private unwatched = false;
  private wake: (() => void) | undefined;
  private readonly subscriptions: Subscription[] = [];
  private readonly lagTimers = new Set<NodeJS.Timeout>();

  private constructor(private readonly ids: ReadonlySet<string>) {}

  static async watch(ctx: GatewayContext, ids: readonly TaskId[]): Promise<TaskChanges> {
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
    let any = false;
    for (const record of records) {
      const id = record.key === null ? undefined : parseTaskId(record.key);
      if (id === undefined || !this.ids.has(id)) continue;
      this.changed.add(id);
      any = true;
      if (changesStatus(record) && record.offset >= (this.recordedUpTo.get(id) ?? 0n))
        this.recordedUpTo.set(id, record.offset + 1n);
    }
    if (any) this.notify();
  }

  onError(): void {
    this.unwatched = true;
    this.notify();
  }

  /**
   * A read of the task reflected its records below `position`: if a status-changing record went by
   * beyond it (its worker writes the head holding it just after), the task is read again soon.
   */
  readUpTo(id: TaskId, position: bigint): void {
    if (position >= (this.recordedUpTo.get(id) ?? 0n)) return;
    const timer = setTimeout(() => {
      this.lagTimers.delete(timer);
      this.changed.add(id);
      this.notify();
    }, HEAD_LAG_RETRY_MS);
    this.lagTimers.add(timer);
  }

  /**
   * Resolves with the tasks a record went by for since the last call — or, at the re-read
   * interval, all of `pending` — or nothing on `closed`.
   */
  async next(closed: Promise<void>, pending: ReadonlySet<TaskId>): Promise<Iterable<TaskId>> {
    if (this.changed.size === 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        closed,
        new Promise<void>((resolve) => {
          this.wake = resolve;
          timer = setTimeout(
            () => {
              for (const id of pending) this.changed.add(id);
              resolve();
            },
            this.unwatched ? UNWATCHED_INTERVAL_MS : REREAD_INTERVAL_MS,
          );
        }),
      ]);
      clearTimeout(timer);
      this.wake = undefined;
    }
    const changed = [...this.changed];
    this.changed.clear();
    return changed;
  }

  close(): void {
    for (const subscription of this.subscriptions) subscription.close();
    for (const timer of this.lagTimers) clearTimeout(timer);
  }

  private notify(): void {
    this.wake?.();
  }
}

/** Whether a record of a task's stream changes the task's status (input asked or answered, a new execution, its end). */
function changesStatus(raw: LogRecord): boolean {
  const record = readStampedRecord(raw);
  if (record?.stamp.stream !== TASK_STREAM) return false;
  return (
    taskEventOf({
      kind: record.stamp.kind,
      attempt: record.stamp.generation.attempt,
      payload: record.payload,
      atMs: raw.timestampMs,
    }) !== undefined
  );
}
