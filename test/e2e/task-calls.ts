// Tasks-extension calls (2026-07-28) through @tidemark/client, recorded for the checker.
// (Runs under Node's type stripping too: the chaos runner imports it.)
import { TaskCancelledError, TaskClient, TaskFailedError, type FollowMode } from '@tidemark/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { rpc } from '@tidemark/fixtures/task-client';
import { effectOf } from './calls.ts';
import { classifyTask, type TaskSeen, type Verdict } from './checker.ts';

export interface TaskCallOptions {
  tool?: string;
  to: number;
  delayMs: number;
  extra?: Record<string, unknown>;
  timeoutMs?: number;
  /** How the client follows the task (default: polls). */
  follow?: FollowMode;
  /** The call's idempotency key (default: the client's own, fresh per call). */
  idempotencyKey?: string;
}

export interface CheckedTask {
  readonly seen: TaskSeen;
  readonly verdict: Verdict;
  /** The effect key the task's result names (a call with `effect: true`). */
  readonly effect?: string;
  /** The task the call created or joined, when the client learned it. */
  readonly taskId?: string;
}

/** Calls a counting tool as a task and waits for it; every ending is classified, never thrown. */
export async function checkedTask(url: string, options: TaskCallOptions): Promise<CheckedTask> {
  const statuses: string[] = [];
  let taskId: string | undefined;
  const client = new TaskClient({
    url,
    follow: options.follow ?? 'poll',
    minPollIntervalMs: 100,
    unavailableForMs: 60_000,
    onStatus: (task) => {
      taskId = task.taskId;
      statuses.push(task.status);
    },
  });
  let seen: TaskSeen;
  let effect: string | undefined;
  try {
    const result = await client.callTool(
      options.tool ?? 'count',
      { to: options.to, delayMs: options.delayMs, ...options.extra },
      {
        signal: AbortSignal.timeout(options.timeoutMs ?? 180_000),
        ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
      },
    );
    const text = (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
    effect = effectOf(result.structuredContent);
    seen = { statuses, numbers: text === '' ? [] : text.split(',').map(Number) };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    // Failed and cancelled are explicit; anything else after the task was created (it became
    // unknown, or never finished) lost it. A call refused before a task existed is explicit too.
    const ending: TaskSeen['ending'] =
      error instanceof TaskFailedError
        ? 'failed'
        : error instanceof TaskCancelledError
          ? 'cancelled'
          : statuses.length > 0
            ? 'lost'
            : 'failed';
    seen = { statuses, ending, why, ...(taskId === undefined ? {} : { taskId }) };
  }
  if (taskId !== undefined) {
    const readBack = await readBackTask(url, taskId, statuses);
    if (readBack !== undefined) seen = { ...seen, readBack };
  }
  return {
    seen,
    verdict: classifyTask(options.to, seen),
    ...(effect === undefined ? {} : { effect }),
    ...(taskId === undefined ? {} : { taskId }),
  };
}

/**
 * The task read again after the client stopped following it, with raw `tasks/get` requests that
 * share no code with the client under test: three reads a little apart, each status appended to
 * `statuses` (a terminal status must never change), and the result the last read holds. Undefined
 * when no read got through (the balancer held past the deadline).
 */
async function readBackTask(
  url: string,
  taskId: string,
  statuses: string[],
): Promise<TaskSeen['readBack']> {
  let readBack: TaskSeen['readBack'];
  const deadline = Date.now() + 20_000;
  for (let reads = 0; reads < 3 && Date.now() < deadline;) {
    const answer = await rpc(url, 'tasks/get', { taskId }).catch(() => undefined);
    if (answer === undefined || answer.status >= 500) {
      await sleep(250); // a held balancer or a gateway restarting: read again
      continue;
    }
    reads++;
    const task = answer.body.result;
    if (task === undefined) {
      if (!/not found/i.test(answer.body.error?.message ?? '')) continue;
      statuses.push('unknown');
      readBack = { unknown: true };
    } else {
      statuses.push(String(task['status']));
      const content = (task['result'] as { content?: Array<{ text?: string }> } | undefined)
        ?.content;
      const text = content?.[0]?.text;
      readBack =
        text === undefined ? {} : { numbers: text === '' ? [] : text.split(',').map(Number) };
    }
    await sleep(100);
  }
  return readBack;
}
