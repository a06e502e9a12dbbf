// Tasks-extension calls (2026-07-28) through @tidemark/client, recorded for the checker.
// (Runs under Node's type stripping too: the chaos runner imports it.)
import { TaskCancelledError, TaskClient, TaskFailedError, type FollowMode } from '@tidemark/client';
import { classifyTask, type TaskSeen, type Verdict } from './checker.ts';

export interface TaskCallOptions {
  tool?: string;
  to: number;
  delayMs: number;
  extra?: Record<string, unknown>;
  timeoutMs?: number;
  /** How the client follows the task (default: polls). */
  follow?: FollowMode;
}

export interface CheckedTask {
  readonly seen: TaskSeen;
  readonly verdict: Verdict;
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
  try {
    const result = await client.callTool(
      options.tool ?? 'count',
      { to: options.to, delayMs: options.delayMs, ...options.extra },
      { signal: AbortSignal.timeout(options.timeoutMs ?? 180_000) },
    );
    const text = (result.content as Array<{ text?: string }> | undefined)?.[0]?.text ?? '';
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
  return { seen, verdict: classifyTask(options.to, seen) };
}
