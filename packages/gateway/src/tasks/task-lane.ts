import type { Response } from 'express';
import type { InboundModernRoute } from '@modelcontextprotocol/server';
import {
  declaresTasks,
  detailedTask,
  JsonRpcErrorCodes,
  missingTasksCapability,
  parseTaskId,
  routingKeyOfTask,
  TASK_CANCEL_METHOD,
  TASK_UPDATE_METHOD,
  type RequestId,
} from '@tidemark/protocol';
import { callerOf, type Asker } from '../auth/index.js';
import type { GatewayContext } from '../gateway-context.js';
import { readTask } from './task-state.js';

// The Tasks extension's methods (`tasks/get`, `tasks/update`, `tasks/cancel`), answered by any
// gateway from the log: the task's record and stream say what it is; an update or a cancel is a
// record the task's worker reads in order with the task's own. `Mcp-Name: <taskId>` may route
// them to a favourite replica, but nothing depends on it.

const TASK_METHODS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

export function isTaskMethod(method: string): boolean {
  return TASK_METHODS.has(method);
}

interface TaskRequest {
  readonly id: RequestId;
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

export async function handleTaskMethod(
  ctx: GatewayContext,
  res: Response,
  route: InboundModernRoute,
  request: TaskRequest,
  asker: Asker,
): Promise<void> {
  const answer = (body: { result: unknown } | { error: unknown }) =>
    void res.status(200).json({ jsonrpc: '2.0', id: request.id, ...body });
  if (!declaresTasks(request.params)) return answer({ error: missingTasksCapability() });
  const verb = request.method.slice('tasks/'.length);
  const invalid = (message: string) =>
    answer({
      error: {
        code: JsonRpcErrorCodes.invalidParams,
        message: `Failed to ${verb} task: ${message}`,
      },
    });
  const raw = request.params?.['taskId'];
  const taskId = typeof raw === 'string' ? parseTaskId(raw) : undefined;
  if (taskId === undefined) return invalid('taskId must be a task id this server gave');
  const inputResponses = request.params?.['inputResponses'];
  if (
    request.method === 'tasks/update' &&
    (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses))
  )
    return invalid('inputResponses must be an object');
  const task = await readTask(ctx, taskId, asker.auth?.subject);
  if (!task.found) return invalid(task.why === 'expired' ? 'Task has expired' : 'Task not found');
  if (request.method === 'tasks/get') return answer({ result: detailedTask(task.state) });
  // Passed to the task's worker through the log; acknowledged once durable (the status follows).
  const method = request.method === 'tasks/update' ? TASK_UPDATE_METHOD : TASK_CANCEL_METHOD;
  await ctx.producer.produce(taskId, [
    {
      lane: 'stateless',
      key: routingKeyOfTask(taskId),
      message: {
        jsonrpc: '2.0',
        method,
        ...(method === TASK_UPDATE_METHOD ? { params: { inputResponses } } : {}),
      },
      classification: route.classification,
      subject: asker.auth?.subject,
      share: asker.share,
      ...callerOf(asker.auth),
      tasks: ctx.options.tasks,
    },
  ]);
  answer({ result: { resultType: 'complete' } });
}
