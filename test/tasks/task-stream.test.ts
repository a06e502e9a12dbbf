import counting from '@tidemark/examples/counting';
import { partitionForSession, type SessionId } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc, sseMessages } from '@tidemark/fixtures/task-client';

// `tasks/stream` (SEP-2694's shape) on the embedded log with two gateway replicas: a task's events
// numbered from 0 across its executions, replayed after `after` from either replica, followed to
// the end; events the log no longer holds are `events_gone` with the earliest still held.

async function setup() {
  const stack = await embeddedStack({ replicas: 2, modules: [counting] });
  onTestFinished(() => stack.stop());
  return { stack, urls: stack.gateways.map((g) => g.url) };
}

type TaskEvent = {
  seq: number;
  type: string;
  data: { method?: string; params?: { progress?: number } };
};

/** A task of `tool`, and its whole event stream read from `after` on `url`. */
async function streamOf(url: string, taskId: string, after?: number) {
  const { text, body } = await rpc(url, 'tasks/stream', {
    taskId,
    ...(after === undefined ? {} : { after }),
  });
  const messages = sseMessages(text);
  const events = messages
    .filter((m) => m['method'] === 'notifications/tasks/event')
    .map((m) => m['params'] as TaskEvent & { taskId: string });
  return { events, body };
}

async function task(url: string, name: string, to: number, extra: Record<string, unknown> = {}) {
  const created = await rpc(
    url,
    'tools/call',
    { name, arguments: { to, delayMs: 20, ...extra } },
    {
      meta: { progressToken: 'p' },
    },
  );
  return String(created.body.result!['taskId']);
}

describe('tasks/stream: a task’s events, replayable from any gateway', () => {
  it('replays from 0 and follows to the end; a resume after k gets exactly the rest', async () => {
    const { urls } = await setup();
    const taskId = await task(urls[0]!, 'count', 5);
    const { events, body } = await streamOf(urls[1]!, taskId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.at(-1)).toMatchObject({ type: 'io.tidemark/terminal' });
    expect(body.result).toMatchObject({ taskId, status: 'completed' });
    const progress = events.filter((e) => e.data.method === 'notifications/progress');
    expect(progress.map((e) => e.data.params?.progress)).toEqual([1, 2, 3, 4, 5]);
    const resumed = await streamOf(urls[0]!, taskId, 2);
    expect(resumed.events).toEqual(events.slice(3));
  });

  it('numbers on across the executions of a retried task', async () => {
    const { urls } = await setup();
    const taskId = await task(urls[0]!, 'flaky_count', 4, { failAt: 3, failAttempts: 1 });
    await pollTask(urls, taskId, ['completed']);
    const { events } = await streamOf(urls[1]!, taskId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    // Two executions: the first wrote progress 1 and 2 before it failed, the second all four.
    const progress = events.filter((e) => e.data.method === 'notifications/progress');
    expect(progress).toHaveLength(6);
    const resumed = await streamOf(urls[0]!, taskId, events.length - 3);
    expect(resumed.events).toEqual(events.slice(-2));
  });

  it('answers events_gone with the earliest seq held when the log no longer holds what is asked', async () => {
    const { stack, urls } = await setup();
    const taskId = await task(urls[0]!, 'count', 3);
    await pollTask(urls, taskId, ['completed']);
    const { events } = await streamOf(urls[0]!, taskId);
    const partition = partitionForSession(taskId as SessionId, 2);
    const { highWatermark } = await stack.log.offsets(stack.topics.events, partition);
    await stack.log.deleteRecordsBefore(stack.topics.events, partition, highWatermark);
    const gone = await rpc(urls[1]!, 'tasks/stream', { taskId, after: 0 });
    expect(gone.body.error).toMatchObject({
      code: -32010,
      message: 'events_gone',
      data: { earliestSeq: events.length },
    });
    // Nothing missed: a client that had everything gets the outcome.
    const caughtUp = await streamOf(urls[1]!, taskId, events.length - 1);
    expect(caughtUp.events).toEqual([]);
    expect(caughtUp.body.result).toMatchObject({ status: 'completed' });
  });

  it('refuses an unknown task, a bad after, and a client without the extension', async () => {
    const { urls } = await setup();
    const unknown = await rpc(urls[0]!, 'tasks/stream', { taskId: 'A'.repeat(22) });
    expect(unknown.body.error).toMatchObject({ code: -32602, message: /Task not found/ });
    const taskId = await task(urls[0]!, 'count', 1);
    const bad = await rpc(urls[0]!, 'tasks/stream', { taskId, after: -2 });
    expect(bad.body.error).toMatchObject({ code: -32602, message: /after/ });
    const plain = await rpc(urls[0]!, 'tasks/stream', { taskId }, { tasks: false });
    expect(plain.body.error).toMatchObject({ code: -32021 });
  });
});
