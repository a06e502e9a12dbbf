import { TaskClient } from '@tidemark/client';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { Cluster, sleep } from '../e2e/cluster.js';
import { pollTask, rpc } from '../support/task-client.js';

// The Tasks extension on a real broker with two gateway and two worker processes: a task is
// created through one gateway, its worker is killed (-9) mid-task, and the task is read through
// both gateways in turn until it completes — with the exact result, from a new generation.

const brokers = inject('kafkaBrokers');

async function cluster() {
  const started = await Cluster.start({ brokers, label: 'tasks', gateways: 2, workers: 2 });
  onTestFinished(() => started.stop());
  return { cluster: started, urls: started.gateways.map((g) => `http://127.0.0.1:${g.port}/mcp`) };
}

const countText = (to: number) => Array.from({ length: to }, (_, i) => i + 1).join(',');
const TERMINAL = ['completed', 'failed', 'cancelled'];

describe('durable tasks on Kafka: two gateways, two workers', () => {
  it('kill -9 of the worker mid-task: the survivor runs it again as a new generation; either gateway reports the exact result', async () => {
    const { cluster: c, urls } = await cluster();
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 30, delayMs: 100 },
    });
    expect(created.body.result?.['resultType']).toBe('task');
    const taskId = String(created.body.result?.['taskId']);
    const runs = () =>
      c.executionsOf(taskId).filter((e) => (e as { stream?: string }).stream === 't');
    for (let i = 0; runs().length === 0; i++) {
      if (i > 200) throw new Error('the task never started');
      await sleep(50);
    }
    const runner = c.runnerOf(taskId)!;
    await sleep(500); // mid-task
    await c.kill(runner, 'SIGKILL');
    const statuses: string[] = [];
    const done = await pollTask(urls, taskId, TERMINAL, {
      seen: statuses,
      timeoutMs: 90_000,
      intervalMs: 200,
    });
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: countText(30) }] },
    });
    expect(statuses).toEqual(['working', 'completed']);
    expect(runs()).toContainEqual(expect.objectContaining({ cause: 'takeover', attempt: 2 }));
    // Terminal stays terminal, on both gateways.
    for (const url of urls)
      expect((await rpc(url, 'tasks/get', { taskId })).body.result?.['status']).toBe('completed');
  });

  it('@tidemark/client awaits a task across the death of its worker: the exact result, as if synchronous', async () => {
    const { cluster: c, urls } = await cluster();
    const statuses: string[] = [];
    let killed = false;
    const client = new TaskClient({
      url: urls[1]!,
      minPollIntervalMs: 200,
      onStatus: (task) => {
        statuses.push(task.status);
        if (killed) return;
        const runner = c.runnerOf(task.taskId);
        if (runner === undefined) return;
        killed = true;
        void c.kill(runner, 'SIGKILL');
      },
    });
    const result = await client.callTool('count', { to: 20, delayMs: 100 });
    expect(killed).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: countText(20) }]);
    expect(statuses.at(-1)).toBe('completed');
  });

  it('input asked through one gateway, answered through the other; a cancel through either', async () => {
    const { urls } = await cluster();
    const deploy = await rpc(urls[0]!, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'production' },
    });
    const taskId = String(deploy.body.result?.['taskId']);
    const asking = await pollTask([urls[1]!], taskId, ['input_required']);
    const [key] = Object.keys(asking['inputRequests'] as object);
    const ack = await rpc(urls[1]!, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: false } } },
    });
    expect(ack.body.result).toEqual({ resultType: 'complete' });
    const done = await pollTask([urls[0]!], taskId, TERMINAL);
    expect(done['result']).toMatchObject({
      content: [{ type: 'text', text: 'not deployed to production' }],
    });

    const long = await rpc(urls[1]!, 'tools/call', {
      name: 'count',
      arguments: { to: 10_000, delayMs: 20 },
    });
    const longId = String(long.body.result?.['taskId']);
    expect((await rpc(urls[0]!, 'tasks/cancel', { taskId: longId })).body.result).toEqual({
      resultType: 'complete',
    });
    expect((await pollTask(urls, longId, TERMINAL))['status']).toBe('cancelled');
  });
});
