import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { tokenFileAuthenticator } from '@tidemark/gateway';
import { defineToolModule, Worker } from '@tidemark/worker';
import type { LogPort } from '@tidemark/protocol';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import * as z from 'zod';
import { embeddedStack, type EmbeddedStackOptions } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc, rpcResponse, sseMessages, TASKS } from '@tidemark/fixtures/task-client';

// The Tasks extension on the stateless lane, end to end on the embedded log with two gateway
// replicas: every answer below is read from the log by whichever replica is asked.

/** A tool that only runs as a task. */
const reports = defineToolModule({
  name: 'reports',
  register: (server) => {
    server.registerTool(
      'build_report',
      { description: 'Builds a (pretend) report.', inputSchema: z.object({ rows: z.number() }) },
      ({ rows }) => ({ content: [{ type: 'text', text: `report of ${rows} rows` }] }),
    );
  },
  taskSupport: { build_report: 'required' },
});

async function setup(options: EmbeddedStackOptions = {}) {
  const stack = await embeddedStack({
    replicas: 2,
    modules: [counting, interactive, reports],
    ...options,
  });
  onTestFinished(() => stack.stop());
  return { stack, urls: stack.gateways.map((g) => g.url) };
}

const countText = (to: number) => Array.from({ length: to }, (_, i) => i + 1).join(',');

describe('Tasks extension (io.modelcontextprotocol/tasks) on the stateless lane', () => {
  it('a declaring client gets a task at once, and its exact result from either replica', async () => {
    const { urls } = await setup();
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 5, delayMs: 30 },
    });
    expect(created.status).toBe(200);
    const task = created.body.result!;
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000 });
    // Minted onto a partition of this gateway's, and named by it: `p`, the partition in base 36.
    expect(task['taskId']).toMatch(/^p[0-9a-z]{3}[A-Za-z0-9_-]{22}$/);
    expect(Date.parse(String(task['createdAt']))).not.toBeNaN();
    expect(task['pollIntervalMs']).toBe(1000);
    // Durable before it was answered: the other replica resolves it at once.
    const first = await rpc(urls[1]!, 'tasks/get', { taskId: task['taskId'] });
    expect(first.body.result).toMatchObject({ resultType: 'complete', taskId: task['taskId'] });
    const done = await pollTask(urls, String(task['taskId']), ['completed', 'failed', 'cancelled']);
    expect(done).toMatchObject({
      resultType: 'complete',
      status: 'completed',
      result: { content: [{ type: 'text', text: countText(5) }] },
    });
    expect(Date.parse(String(done['lastUpdatedAt']))).toBeGreaterThanOrEqual(
      Date.parse(String(done['createdAt'])),
    );
  });

  it('server/discover offers the extension', async () => {
    const { urls } = await setup();
    const discover = await rpc(urls[0]!, 'server/discover', {});
    expect(discover.body.result?.['capabilities']).toMatchObject({ extensions: { [TASKS]: {} } });
  });

  it('never a task for a client that did not declare it; -32021 where the tool requires one', async () => {
    const { urls } = await setup();
    const plain = await rpc(
      urls[0]!,
      'tools/call',
      { name: 'count', arguments: { to: 3 } },
      {
        tasks: false,
      },
    );
    expect(plain.body.result).toMatchObject({ content: [{ type: 'text', text: countText(3) }] });
    expect(plain.body.result?.['resultType']).not.toBe('task');
    const refused = await rpc(
      urls[0]!,
      'tools/call',
      {
        name: 'build_report',
        arguments: { rows: 3 },
      },
      { tasks: false },
    );
    expect(refused.body.error).toEqual({
      code: -32021,
      message: 'Missing required client capability',
      data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
    });
    const required = await rpc(urls[0]!, 'tools/call', {
      name: 'build_report',
      arguments: { rows: 3 },
    });
    expect(required.body.result?.['resultType']).toBe('task');
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const answer = await rpc(
        urls[0]!,
        method,
        { taskId: required.body.result?.['taskId'] },
        {
          tasks: false,
        },
      );
      expect(answer.body.error?.code).toBe(-32021);
    }
  });

  it('input required: the task asks through tasks/get, one replica takes the answer, the other reports the result', async () => {
    const { urls } = await setup();
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'staging' },
    });
    const taskId = String(created.body.result?.['taskId']);
    const asking = await pollTask(urls, taskId, ['input_required']);
    const requests = asking['inputRequests'] as Record<string, { method: string }>;
    const keys = Object.keys(requests);
    expect(keys).toHaveLength(1);
    expect(requests[keys[0]!]!.method).toBe('elicitation/create');
    // Unknown keys are ignored; the outstanding one is answered through the other replica.
    const answer = { action: 'accept', content: { confirm: true } };
    const ack = await rpc(urls[1]!, 'tasks/update', {
      taskId,
      inputResponses: { 'not-asked': answer, [keys[0]!]: answer },
    });
    expect(ack.body.result).toEqual({ resultType: 'complete' });
    const done = await pollTask(urls, taskId, ['completed', 'failed']);
    expect(done['result']).toMatchObject({
      content: [{ type: 'text', text: 'deployed to staging' }],
    });
    // A key once answered is never asked again.
    const late = await rpc(urls[0]!, 'tasks/update', {
      taskId,
      inputResponses: { [keys[0]!]: answer },
    });
    expect(late.body.result).toEqual({ resultType: 'complete' });
    expect((await rpc(urls[0]!, 'tasks/get', { taskId })).body.result?.['status']).toBe(
      'completed',
    );
  });

  it('a task waiting for its user holds no call slot: other calls run meanwhile', async () => {
    const { urls } = await setup({ worker: { maxConcurrentCalls: 1 } });
    const waiting = await rpc(urls[0]!, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'staging' },
    });
    const taskId = String(waiting.body.result?.['taskId']);
    await pollTask(urls, taskId, ['input_required']);
    const other = await rpc(
      urls[1]!,
      'tools/call',
      { name: 'count', arguments: { to: 3 } },
      { tasks: false },
    );
    expect(other.body.result).toMatchObject({ content: [{ type: 'text', text: countText(3) }] });
    const [key] = Object.keys(
      (await pollTask(urls, taskId, ['input_required']))['inputRequests'] as object,
    );
    await rpc(urls[0]!, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: false } } },
    });
    expect((await pollTask(urls, taskId, ['completed']))['result']).toMatchObject({
      content: [{ type: 'text', text: 'not deployed to staging' }],
    });
  });

  it('a worker that stops (drains) mid-task leaves it to the next: its offset is not committed, the next worker runs it to the end', async () => {
    // No handoff: the task is given up at once (a longer task would outlive any handoff).
    const started: string[] = [];
    const { stack, urls } = await setup({
      worker: { handoffTimeoutMs: 0, onExecution: (e) => void started.push(e.session) },
    });
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 20, delayMs: 50 },
    });
    const taskId = String(created.body.result?.['taskId']);
    // Mid-task: its execution started (and the tool runs about a second).
    await vi.waitUntil(() => started.includes(taskId), { timeout: 10_000, interval: 20 });
    await stack.worker.stop();
    const executions: Array<{ session: string; cause: string }> = [];
    const next = new Worker({
      log: stack.log,
      topics: stack.topics,
      modules: [counting, interactive, reports],
      pollMs: 20,
      onProblem: () => {},
      onExecution: (e) => void executions.push(e),
    });
    await next.start();
    onTestFinished(() => next.stop());
    const done = await pollTask(urls, taskId, ['completed', 'failed', 'cancelled']);
    expect(done).toMatchObject({
      status: 'completed',
      result: { content: [{ type: 'text', text: countText(20) }] },
    });
    expect(executions).toContainEqual(
      expect.objectContaining({ session: taskId, cause: 'takeover' }),
    );
  });

  it('tasks/cancel stops the tool; the task ends cancelled and stays so', async () => {
    const { urls } = await setup();
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 10_000, delayMs: 20 },
    });
    const taskId = String(created.body.result?.['taskId']);
    const ack = await rpc(urls[1]!, 'tasks/cancel', { taskId });
    expect(ack.body.result).toEqual({ resultType: 'complete' });
    const done = await pollTask(urls, taskId, ['cancelled', 'completed', 'failed']);
    expect(done['status']).toBe('cancelled');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await rpc(urls[0]!, 'tasks/get', { taskId })).body.result?.['status']).toBe(
      'cancelled',
    );
  });

  it('a task past its TTL is failed, not left working', async () => {
    const { urls } = await setup({ worker: { taskTtlMs: 300 } });
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 10_000, delayMs: 20 },
    });
    expect(created.body.result?.['ttlMs']).toBe(300);
    const done = await pollTask(urls, String(created.body.result?.['taskId']), [
      'failed',
      'completed',
      'cancelled',
    ]);
    expect(done['status']).toBe('failed');
    expect(done['error']).toMatchObject({ code: -32603 });
    expect(String(done['statusMessage'])).toMatch(/expired/);
  });

  it('a finished task is kept until its TTL, past the session and result TTLs, then forgotten', async () => {
    const { urls } = await setup({
      // Margins a loaded machine keeps: the other TTLs pass 5× over before the task's does.
      worker: { sessionTtlMs: 300, resultTtlMs: 300, taskTtlMs: 6_000 },
    });
    const created = await rpc(urls[0]!, 'tools/call', { name: 'count', arguments: { to: 2 } });
    const taskId = String(created.body.result?.['taskId']);
    await pollTask(urls, taskId, ['completed']);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // both other TTLs passed, swept
    expect((await rpc(urls[1]!, 'tasks/get', { taskId })).body.result?.['status']).toBe(
      'completed',
    );
    const deadline = Date.now() + 20_000;
    let answer = await rpc(urls[1]!, 'tasks/get', { taskId });
    while (answer.body.result !== undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await rpc(urls[1]!, 'tasks/get', { taskId });
    }
    expect(answer.body.error).toEqual({
      code: -32602,
      message: 'Failed to get task: Task not found',
    });
  });

  it('task ids are bound to their subject: another subject gets exactly "not found"', async () => {
    const { urls } = await setup({
      gateway: {
        authenticate: tokenFileAuthenticator('token-a-0123456789 alice\ntoken-b-0123456789 bob\n'),
      },
    });
    const created = await rpc(
      urls[0]!,
      'tools/call',
      { name: 'count', arguments: { to: 2 } },
      {
        token: 'token-a-0123456789',
      },
    );
    const taskId = String(created.body.result?.['taskId']);
    await pollTask(urls, taskId, ['completed'], { token: 'token-a-0123456789' });
    const unknown = await rpc(
      urls[1]!,
      'tasks/get',
      { taskId: 'AAAAAAAAAAAAAAAAAAAAAA' },
      {
        token: 'token-b-0123456789',
      },
    );
    const other = await rpc(urls[1]!, 'tasks/get', { taskId }, { token: 'token-b-0123456789' });
    expect(other.body.error).toEqual(unknown.body.error);
    expect(other.body.error).toEqual({
      code: -32602,
      message: 'Failed to get task: Task not found',
    });
    const cancel = await rpc(urls[1]!, 'tasks/cancel', { taskId }, { token: 'token-b-0123456789' });
    expect(cancel.body.error).toEqual({
      code: -32602,
      message: 'Failed to cancel task: Task not found',
    });
    // The owner still sees it.
    const own = await rpc(urls[1]!, 'tasks/get', { taskId }, { token: 'token-a-0123456789' });
    expect(own.body.result?.['status']).toBe('completed');
  });

  it('--tasks never: plain calls; --tasks always: every call of a declaring client is a task', async () => {
    const never = await setup({ gateway: { tasks: 'never' } });
    const plain = await rpc(never.urls[0]!, 'tools/call', { name: 'count', arguments: { to: 2 } });
    expect(plain.body.result).toMatchObject({ content: [{ type: 'text', text: '1,2' }] });
    const always = await setup({
      modules: [defineToolModule({ ...counting, taskSupport: {} })],
      gateway: { tasks: 'always' },
    });
    const task = await rpc(always.urls[0]!, 'tools/call', { name: 'count', arguments: { to: 2 } });
    expect(task.body.result?.['resultType']).toBe('task');
  });

  it('subscriptions/listen with taskIds: notifications/tasks as the task changes, then the subscription ends', async () => {
    const { urls } = await setup();
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'count',
      arguments: { to: 5, delayMs: 40 },
    });
    const taskId = String(created.body.result?.['taskId']);
    const listen = await rpc(urls[1]!, 'subscriptions/listen', {
      notifications: { taskIds: [taskId, 'AAAAAAAAAAAAAAAAAAAAAA'], toolsListChanged: true },
    });
    const messages = sseMessages(listen.text);
    const subscription: Record<string, unknown> = {
      'io.modelcontextprotocol/subscriptionId': expect.anything() as unknown,
    };
    expect(messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] }, _meta: subscription },
    });
    const updates = messages.filter((m) => m['method'] === 'notifications/tasks');
    const statuses = updates.map((m) => (m['params'] as { status: string }).status);
    expect(statuses.at(-1)).toBe('completed');
    expect(statuses.filter((s) => s === 'completed')).toHaveLength(1);
    expect(updates.at(-1)!['params']).toMatchObject({
      taskId,
      result: { content: [{ type: 'text', text: countText(5) }] },
      _meta: subscription,
    });
    expect(messages.at(-1)).toMatchObject({ result: { _meta: subscription } });
    const refused = await rpc(
      urls[0]!,
      'subscriptions/listen',
      { notifications: { taskIds: [taskId] } },
      { tasks: false },
    );
    expect(refused.body.error?.code).toBe(-32021);
  });

  it('a listen reads a task again only when its stream writes: a task waiting for its user costs no reads', async () => {
    // Replica 1 serves the listen; every read of a task's records (a fetch that does not wait) it
    // makes is counted. Replica 0 creates the task and takes its answer.
    let reads = 0;
    const { urls } = await setup({
      gatewayLog: (log, replica) =>
        replica === 0
          ? log
          : Object.assign(Object.create(log) as LogPort, {
              fetch: (...args: Parameters<LogPort['fetch']>) => {
                if (args[3]?.maxWaitMs === 0) reads++;
                return log.fetch(...args);
              },
            }),
    });
    const created = await rpc(urls[0]!, 'tools/call', {
      name: 'confirm_deploy',
      arguments: { env: 'staging' },
    });
    const taskId = String(created.body.result?.['taskId']);
    const asking = await pollTask([urls[0]!], taskId, ['input_required']);
    const response = await rpcResponse(urls[1]!, 'subscriptions/listen', {
      notifications: { taskIds: [taskId] },
    });
    // The listen's first notifications/tasks carries the task as it read it: from then on it waits.
    let readOnce!: () => void;
    const firstRead = new Promise<void>((resolve) => (readOnce = resolve));
    const listen = (async () => {
      let text = '';
      for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        if (text.includes('notifications/tasks')) readOnce();
      }
      return { text };
    })();
    await firstRead;
    reads = 0;
    await sleep(2_000);
    const idleReads = reads;
    const [key] = Object.keys(asking['inputRequests'] as object);
    await rpc(urls[0]!, 'tasks/update', {
      taskId,
      inputResponses: { [key!]: { action: 'accept', content: { confirm: true } } },
    });
    const messages = sseMessages((await listen).text);
    const statuses = messages
      .filter((m) => m['method'] === 'notifications/tasks')
      .map((m) => (m['params'] as { status: string }).status);
    expect(statuses[0]).toBe('input_required');
    expect(statuses.at(-1)).toBe('completed');
    expect(messages.at(-1)).toHaveProperty('result');
    // Polling its state every 250 ms, as a listen did before, read it 8 times in these 2 s.
    expect(idleReads).toBeLessThanOrEqual(1);
  });

  it('bad task requests are answered -32602, never 5xx', async () => {
    const { urls } = await setup();
    for (const params of [{}, { taskId: 12 }, { taskId: '../../etc' }]) {
      const answer = await rpc(urls[0]!, 'tasks/get', params);
      expect(answer.status).toBe(200);
      expect(answer.body.error?.code).toBe(-32602);
    }
    const created = await rpc(urls[0]!, 'tools/call', { name: 'count', arguments: { to: 1 } });
    const taskId = created.body.result?.['taskId'];
    const update = await rpc(urls[0]!, 'tasks/update', { taskId, inputResponses: [1] });
    expect(update.body.error?.code).toBe(-32602);
  });
});
