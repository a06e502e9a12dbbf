import { TASK_MODES, type TaskMode } from '@tidemark/protocol';
import { str, UsageError, type FlagValues } from '../options.js';

/** When a 2026-07-28 `tools/call` becomes a task (`dev`, `gateway`). */
export const TASKS_FLAG = { tasks: { type: 'string' } } as const;

export function tasksOf(values: FlagValues): {
  tasks?: TaskMode;
} {
  const value = str(values['tasks']);
  if (value === undefined) return {};
  const mode = TASK_MODES.find((m) => m === value);
  if (mode === undefined)
    throw new UsageError(`--tasks: expected one of ${TASK_MODES.join(', ')}, got "${value}"`);
  return { tasks: mode };
}
