import interactive from '@tidemark/examples/interactive';
import counting from '@tidemark/examples/counting';
import type { LogPort } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc, rpcResponse } from '@tidemark/fixtures/task-client';

// A task read costs the task, not its partition (issue #33): the worker keeps the task's status
// in its stream's head with every record that changes it, so `tasks/get` reads that head — not
// every record of `events` written since the task began, however busy its partition is.

const NOISE = 20_000;

async function setup() {
  // Every record of `events` the gateway fetches is counted.
  const counted = { events: 0 };
  const stack = await embeddedStack({
    partitions: 1,
    modules: [counting, interactive],
    gatewayLog: (log) =>
      Object.assign(Object.create(log) as LogPort, {
        fetch: async (...args: Parameters<LogPort['fetch']>) => {
          const fetched = await log.fetch(...args);
          if (args[0] === stack.topics.events) counted.events += fetched.records.length;
          return fetched;
        },
      }),
  });
  onTestFinished(() => stack.stop());
  return { stack, url: stack.gateways[0]!.url, counted };
}

/** Other sessions' traffic on the task's partition: records the old fold read on every get. */
async function busyPartition(log: LogPort, topic: string): Promise<void> {
  const value = Buffer.from('{"jsonrpc":"2.0","method":"notifications/progress"}');
  for (let i = 0; i < NOISE; i += 1_000)
    await log.append(
      topic,
      Array.from({ length: 1_000 }, (_, j) => ({
        partition: 0,
        key: `someone-else-${i + j}`,
        value,
      })),
    );
}

describe('task reads', () => {
  it('tasks/get of a task waiting for its user reads its head, not the partition around it', async () => {
    const { stack, url, counted } = await setup();
    const created = await rpc(url, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'staging' },
    });
    const taskId = String(created.body.result?.['taskId']);
    const asking = await pollTask([url], taskId, ['input_required']);
    await busyPartition(stack.log, stack.topics.events);
    counted.events = 0;
    const read = await rpc(url, 'tasks/get', { taskId });
    expect(read.body.result).toMatchObject({ status: 'input_required', taskId });
    expect(read.body.result?.['inputRequests']).toEqual(asking['inputRequests']);
    expect(counted.events).toBe(0);
    // Answered: the status it reads is the one after the answer, still from the head.
    const [key] = Object.keys(asking['inputRequests'] as object);
    await rpc(url, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
    });
    const done = await pollTask([url], taskId, ['completed']);
    expect(done).toMatchObject({
      result: { content: [{ type: 'text', text: 'deployed to staging' }] },
    });
    await busyPartition(stack.log, stack.topics.events);
    counted.events = 0;
    expect((await rpc(url, 'tasks/get', { taskId })).body.result).toMatchObject({
      status: 'completed',
    });
    expect(counted.events).toBe(0);
  });

  it('tasks/stream from the last event a client has reads what was written since the task’s head, not the partition (security review M4)', async () => {
    const { stack, url, counted } = await setup();
    // The last seq a client has: what a stream from the start gives within half a second.
    const lastSeq = async (taskId: string) => {
      const controller = new AbortController();
      const response = await rpcResponse(
        url,
        'tasks/stream',
        { taskId },
        { signal: controller.signal },
      );
      setTimeout(() => controller.abort(), 500);
      let text = '';
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body as ReadableStream<Uint8Array>)
          text += decoder.decode(chunk, { stream: true });
      } catch {
        // aborted: what came is what the client has
      }
      const seqs = [...text.matchAll(/"seq":(\d+)/g)].map((m) => Number(m[1]));
      expect(seqs.length).toBeGreaterThan(0);
      return Math.max(...seqs);
    };
    // Finished, then traffic: the outcome is in the head, nothing is read.
    const done = String(
      (await rpc(url, 'tools/call', { name: 'count', arguments: { to: 3, delayMs: 0 } })).body
        .result?.['taskId'],
    );
    await pollTask([url], done, ['completed']);
    const doneSeq = await lastSeq(done);
    await busyPartition(stack.log, stack.topics.events);
    counted.events = 0;
    const finished = await rpc(url, 'tasks/stream', { taskId: done, after: doneSeq });
    expect(finished.text).toContain('"status":"completed"');
    expect(counted.events).toBe(0);
    // Waiting for its user, its head written after the traffic: only what follows the head.
    const waiting = String(
      (await rpc(url, 'tools/call', { name: 'confirm_deploy', arguments: { env: 'prod' } })).body
        .result?.['taskId'],
    );
    await pollTask([url], waiting, ['input_required']);
    const waitingSeq = await lastSeq(waiting);
    counted.events = 0;
    const controller = new AbortController();
    const following = rpcResponse(
      url,
      'tasks/stream',
      { taskId: waiting, after: waitingSeq },
      { signal: controller.signal },
    );
    expect((await following).status).toBe(200);
    controller.abort();
    expect(counted.events).toBeLessThan(100);
    // Not left waiting for its user: the worker would wait for it when it stops.
    await rpc(url, 'tasks/cancel', { taskId: waiting });
  });
});
