// FastMCP 4's client with its Tasks extension (`fastmcp-tasks`, pinned in
// test/interop/python/requirements.txt), unmodified, through test/interop/python/tasks_client.py.
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { pythonWithMcp } from '../support/prerequisites.js';
import { startProcess } from '../support/processes.js';
import { taskSuite, type TaskRun } from './task-suite.js';

const script = fileURLToPath(new URL('python/tasks_client.py', import.meta.url));

async function run(args: string[]) {
  const child = startProcess(onTestFinished, pythonWithMcp(), [script, ...args]);
  const last = await child.waitFor(
    (e) => 'result' in e || 'error' in e || 'tasks' in e || 'taskId' in e,
    60_000,
  );
  if ('error' in last) throw new Error(`tasks_client.py ${args[0]}: ${String(last['error'])}`);
  return child.events;
}

function taskRun(events: ReadonlyArray<Record<string, unknown>>): TaskRun {
  const last = events.at(-1)!;
  return {
    created: String(events.find((e) => 'created' in e)?.['created']),
    asked: events.flatMap((e) => (typeof e['asked'] === 'string' ? [e['asked']] : [])),
    result: (last['result'] as string | null) ?? null,
    status: String(last['status']),
  };
}

taskSuite('fastmcp', {
  handshake: async (url) => {
    const events = await run(['handshake', url]);
    return {
      negotiated: String(events.find((e) => 'negotiated' in e)?.['negotiated']),
      tasks: events.find((e) => 'tasks' in e)?.['tasks'] === true,
    };
  },
  run: async (url, kind) => taskRun(await run([kind, url])),
  cancel: async (url) => taskRun(await run(['cancel', url])),
  start: async (url) => String((await run(['start', url])).find((e) => 'taskId' in e)!['taskId']),
  resume: async (url, taskId) => taskRun(await run(['resume', url, taskId])),
  repeatsInput: {
    seen: 'answered and completed, but the same request can be asked twice: FastMCP answers an input request again when a poll shows it before the worker took the first answer, where SEP-2663 says clients should deduplicate input keys across polls',
    owner: 'client',
    instead:
      'make an answer idempotent in your elicitation handler (remember the keys answered), or drive the task with `@tidemark/client`; reproduction: docs/interop/fastmcp-repeated-input.md.',
  },
});
