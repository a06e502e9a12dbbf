import type { Response } from 'express';
import {
  declaresTasks,
  detailedTask,
  isTerminalTaskStatus,
  missingTasksCapability,
  parseSessionId,
  type RequestId,
  type SessionId,
} from '@tidemark/protocol';
import type { AuthResult } from './auth/authenticators.js';
import type { GatewayContext } from './gateway-context.js';
import { readTask } from './task-state.js';

// `subscriptions/listen` with `notifications.taskIds`: `notifications/tasks` pushed to the client
// as its tasks change, each the DetailedTask `tasks/get` would answer at that moment. The gateway
// reads the tasks from the log itself (any gateway can), so a listen survives nothing but its own
// connection: a client that reconnects listens again and gets each task's current state first.

/** Task ids one listen may follow. */
const MAX_LISTENED_TASKS = 64;

/** How often a listen reads its tasks' state from the log. */
const READ_INTERVAL_MS = 250;

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
  auth: AuthResult | undefined,
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
    if (id !== undefined && !agreed.includes(id) && (await readTask(ctx, id, auth?.subject)).found)
      agreed.push(id);
  }
  const meta = { [SUBSCRIPTION_ID_META_KEY]: request.id };
  const sse = ctx.streams.open(res, undefined);
  sse.event(undefined, {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: agreed }, _meta: meta },
  });
  const sent = new Map<SessionId, string>();
  const pending = new Set(agreed);
  while (sse.isOpen && pending.size > 0) {
    for (const id of pending) {
      const task = await readTask(ctx, id, auth?.subject);
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
    if (pending.size > 0)
      await Promise.race([sse.closed, new Promise((r) => setTimeout(r, READ_INTERVAL_MS))]);
  }
  // Every task it followed is finished (or gone): the subscription ends gracefully.
  if (sse.isOpen) {
    sse.event(undefined, { jsonrpc: '2.0', id: request.id, result: { _meta: meta } });
    sse.end();
  }
}
