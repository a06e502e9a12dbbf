// The official TypeScript Tasks client (`@modelcontextprotocol/ext-tasks`, pinned in package.json),
// unmodified, on the request path its host must supply (ext-tasks-request-path.ts).
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import type { ToolExecution, TaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { expect, onTestFinished } from 'vitest';
import { extTasksSession } from './ext-tasks-request-path.js';
import { taskSuite, type TaskRun } from './task-suite.js';

type Result = { content?: Array<{ type: string; text?: string }> };

const numbers30 = Array.from({ length: 30 }, (_, i) => i + 1).join(',');

async function connect(url: string, asked: string[] = [], sent?: string[]) {
  const opened = await extTasksSession(
    url,
    (message) => {
      asked.push(message);
      return { action: 'accept', content: { confirm: true } };
    },
    sent,
  );
  onTestFinished(() => opened.close());
  return opened;
}

const open = async (url: string, asked?: string[], sent?: string[]) =>
  (await connect(url, asked, sent)).session;

/** Where a task execution ends: its status, and its result's text when it completed. */
async function settled(
  execution: ToolExecution<unknown>,
  asked: readonly string[],
): Promise<TaskRun> {
  const created = execution.kind === 'task' ? 'working' : 'immediate';
  const { outcome } = await execution.settle();
  return { created, asked, ...ending(outcome) };
}

function ending(outcome: TaskOutcome<unknown>): Pick<TaskRun, 'result' | 'status'> {
  if (outcome.status !== 'completed') return { result: null, status: outcome.status };
  const text = (resultFromTaskOutcome(outcome) as Result).content?.[0]?.text ?? null;
  return { result: text, status: 'completed' };
}

taskSuite('ext-tasks', {
  handshake: async (url) => {
    const { session, negotiated } = await connect(url);
    return { negotiated: negotiated ?? 'none', tasks: session.capabilities.execution };
  },
  run: async (url, kind) => {
    const asked: string[] = [];
    const methods: string[] = [];
    const session = await open(url, asked, methods);
    const execution =
      kind === 'task'
        ? await session.callTool('count', { to: 5, delayMs: 50 })
        : await session.callTool('confirm_deploy', { env: 'staging' });
    return { ...(await settled(execution, asked)), methods };
  },
  pollsOnly: {
    seen: 'completes with the exact result, following the task by `tasks/get` polls only (no `subscriptions/listen`): a change is seen up to a poll interval late',
    instead:
      "to be told of each change as it happens, follow with `@tidemark/client` (`follow: 'listen'`); see docs/interop/ext-tasks.md.",
  },
  cancel: async (url) => {
    const session = await open(url);
    const execution = await session.callTool('count', { to: 100, delayMs: 100 });
    await execution.cancel();
    return settled(execution, []);
  },
  start: async (url) => {
    const session = await open(url);
    const execution = await session.callTool('count', { to: 30, delayMs: 100 });
    if (execution.kind !== 'task') throw new Error('count was not run as a task');
    return JSON.stringify(execution.serializeReference());
  },
  handoff: async (from, to) => {
    // The API's way: handoff() persists a reference and detaches; then the host closes its session.
    const leaving = await extTasksSession(from);
    const handed = await leaving.session.callTool('count', { to: 30, delayMs: 100 });
    if (handed.kind !== 'task') throw new Error('count was not run as a task');
    let kept: unknown;
    await handed.handoff((reference) => void (kept = reference));
    await leaving.close();
    const lost = await (await open(to)).resumeTask(kept as never);
    expect(await settled(lost, [])).toMatchObject({ status: 'cancelled' });
    // What works: a reference from serializeReference(), and only the SDK client closed.
    const staying = await extTasksSession(from);
    onTestFinished(() => staying.close());
    const kept2 = await staying.session.callTool('count', { to: 30, delayMs: 100 });
    if (kept2.kind !== 'task') throw new Error('count was not run as a task');
    const reference = kept2.serializeReference();
    await staying.closeClient();
    const resumed = await (await open(to)).resumeTask(reference);
    expect(await settled(resumed, [])).toMatchObject({ result: numbers30, status: 'completed' });
    return {
      outcome: 'limit',
      owner: 'client',
      seen: '`handoff()` then closing the session cancels the handed-off task: `session.close()` still holds the execution, finds it unsettled and sends `tasks/cancel`. A reference from `serializeReference()` with only the SDK client closed resumes in a new session on the other endpoint: exact result',
      instead:
        'persist `execution.serializeReference()` and close the SDK `Client` (not the ext-tasks session) when the host stops; reproduction: docs/interop/ext-tasks-handoff-cancels.md.',
    };
  },
  resume: async (url, reference) => {
    // A host that restarted: a new session on the other endpoint, from the stored reference.
    const session = await open(url);
    const execution = await session.resumeTask(JSON.parse(reference) as never);
    return settled(execution, []);
  },
});
