import type { AddressInfo } from 'node:net';
import { TaskClient } from '@tidemark/client';
import counting from '@tidemark/examples/counting';
import { createGateway, tokenFileAuthenticator } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import {
  createKeyring,
  partitionForSession,
  readStampedRecord,
  type SessionId,
} from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { Cluster, sleep } from '../e2e/cluster.js';
import { pollTask, rpc, rpcResponse, sseMessages } from '@tidemark/fixtures/task-client';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

// The Tasks extension on a real broker with two gateway and two worker processes: a task is
// created through one gateway, its worker is killed (-9) mid-task, and the task is read through
// both gateways in turn until it completes — with the exact result, from a new generation.

const brokers = inject('kafkaBrokers');

async function cluster(options: { handoffTimeoutMs?: number } = {}) {
  const started = await Cluster.start({
    brokers,
    label: 'tasks',
    gateways: 2,
    workers: 2,
    ...options,
  });
  onTestFinished(() => started.stop());
  return { cluster: started, urls: started.gateways.map((g) => `http://127.0.0.1:${g.port}/mcp`) };
}

const countText = (to: number) => Array.from({ length: to }, (_, i) => i + 1).join(',');
const TERMINAL = ['completed', 'failed', 'cancelled'];

/** The attempts whose terminal record of the task's stream is in the log, in log order. */
async function terminalAttempts(
  log: KafkaLog,
  topic: string,
  partitions: number,
  taskId: string,
): Promise<number[]> {
  const partition = partitionForSession(taskId as SessionId, partitions);
  const attempts: number[] = [];
  for (let offset = 0n; ;) {
    const fetched = await log.fetch(topic, partition, offset, { maxWaitMs: 0 });
    for (const record of fetched.records) {
      const read = record.key === taskId ? readStampedRecord(record) : undefined;
      if (read?.stamp.stream === 't' && read.stamp.kind === 'terminal')
        attempts.push(read.stamp.generation.attempt);
    }
    if (fetched.records.length === 0 || fetched.nextOffset >= fetched.highWatermark) break;
    offset = fetched.nextOffset;
  }
  return attempts;
}

describe('durable tasks on Kafka: two gateways, two workers', () => {
  it('tasks/stream numbers a task’s events on across a kill -9 takeover, resumed on the other gateway', async () => {
    const { cluster: c, urls } = await cluster();
    const created = await rpc(
      urls[0]!,
      'tools/call',
      { name: 'count', arguments: { to: 40, delayMs: 100 } },
      { meta: { progressToken: 'p' } },
    );
    const taskId = String(created.body.result?.['taskId']);
    // Read the first events on gateway A as they come, then leave: a client that drops.
    const abort = new AbortController();
    const response = await rpcResponse(
      urls[0]!,
      'tasks/stream',
      { taskId },
      { signal: abort.signal },
    );
    let text = '';
    let seen: Array<{ seq: number; type: string }> = [];
    const decoder = new TextDecoder();
    for await (const chunk of response.body as ReadableStream<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      seen = taskEvents(text);
      if (seen.length >= 4) break;
    }
    abort.abort();
    await c.kill(c.runnerOf(taskId)!, 'SIGKILL');
    // Resumed on gateway B after the last event seen: the rest, numbered on, to the end.
    const after = seen.at(-1)!.seq;
    const rest = await rpc(urls[1]!, 'tasks/stream', { taskId, after });
    const events = taskEvents(rest.text);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => after + 1 + i));
    expect(events.at(-1)).toMatchObject({ type: 'io.tidemark/terminal' });
    expect(rest.body.result).toMatchObject({ taskId, status: 'completed' });
    expect(c.executionsOf(taskId).some((e) => e.attempt > 1)).toBe(true); // a takeover ran it
    // …and a reader from 0 on either gateway gets the same numbers for the same records.
    const whole = taskEvents((await rpc(urls[0]!, 'tasks/stream', { taskId })).text);
    expect(whole.slice(after + 1)).toEqual(events);
  });

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
      if (i > 600) throw new Error('the task never started in 30 s');
      await sleep(50);
    }
    const runner = c.runnerOf(taskId)!;
    // Mid-task: killed as soon as it started (it runs 30 × 100 ms, with nothing logged between
    // its start and its end to wait for: a task sends no progress without a token).
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

  it.each(['poll', 'listen'] as const)(
    '@tidemark/client (follow: %s) awaits a task across the death of its worker: the exact result, as if synchronous',
    async (follow) => {
      const { cluster: c, urls } = await cluster();
      const statuses: string[] = [];
      let killed = false;
      const client = new TaskClient({
        url: urls[1]!,
        follow,
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
    },
  );

  it('a task whose partition moves to a new worker and that outlives the handoff: the old worker (alive) stops it and writes nothing more; the new owner finishes it', async () => {
    // The tasks run ~8 s; the old worker lets them run 1 s after the move.
    const { cluster: c, urls } = await cluster({ handoffTimeoutMs: 1_000 });
    // Two workers own the two partitions; a third joins once a task runs on each partition,
    // and takes one of them over while the worker that ran its task lives on.
    await c.kill(c.workers[1]!, 'SIGTERM');
    await c.assigned();
    // Through both gateways in turn: each mints task ids onto its own share of the partitions.
    const tasks = new Map<number, string>();
    for (let i = 0; tasks.size < c.partitions; i++) {
      const url = urls[i % urls.length]!;
      const created = await rpc(url, 'tools/call', {
        name: 'count',
        arguments: { to: 80, delayMs: 100 },
      });
      const taskId = String(created.body.result?.['taskId']);
      const partition = partitionForSession(taskId as SessionId, c.partitions);
      if (!tasks.has(partition)) tasks.set(partition, taskId);
      else await rpc(url, 'tasks/cancel', { taskId });
    }
    const first = c.workers[0]!;
    await c.startWorker();
    await c.assigned();
    const results = await Promise.all(
      [...tasks.values()].map((taskId) =>
        pollTask(urls, taskId, TERMINAL, { timeoutMs: 90_000, intervalMs: 200 }),
      ),
    );
    for (const done of results)
      expect(done).toMatchObject({
        status: 'completed',
        result: { content: [{ type: 'text', text: countText(80) }] },
      });
    // A task on a moved partition was run again by its next owner, and every execution but the
    // last stopped unfinished: the worker that lost the partition, though alive to go on, wrote
    // no outcome.
    const log = new KafkaLog({ brokers: [...brokers] });
    onTestFinished(() => log.close());
    let takenOver = 0;
    for (const taskId of tasks.values()) {
      const attempts = c
        .executionsOf(taskId)
        .filter((e) => (e as { stream?: string }).stream === 't')
        .map((e) => e.attempt);
      if (Math.max(...attempts) > 1) takenOver++;
      expect(await terminalAttempts(log, c.names.events, c.partitions, taskId)).toEqual([
        Math.max(...attempts),
      ]);
    }
    expect(takenOver).toBeGreaterThan(0);
    expect(first.process.child.exitCode).toBe(null);
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

/** Two authenticated gateways and two workers in this process, on the real broker. */
async function authenticatedStack(taskTtlMs: number) {
  const { prefix, names } = await provisionTestTopics({ onTestFinished }, brokers, {
    label: 'tasks-auth',
    partitions: 2,
  });
  const log = new KafkaLog({ brokers, groupSessionTimeoutMs: 6_000 });
  onTestFinished(() => log.close());
  const workers = [0, 1].map(
    () =>
      new Worker({
        log,
        topics: names,
        modules: [counting],
        group: `${prefix}workers`,
        pollMs: 100,
        commitIntervalMs: 100,
        taskTtlMs,
        onProblem: () => {},
      }),
  );
  for (const worker of workers) {
    await worker.start();
    onTestFinished(() => worker.stop());
  }
  const deadline = Date.now() + 30_000;
  while (workers.flatMap((w) => w.assignedPartitions).length < 2 && Date.now() < deadline)
    await sleep(50);
  const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(9) } });
  const urls: string[] = [];
  for (let i = 0; i < 2; i++) {
    const gateway = await createGateway({
      log,
      topics: names,
      keyring,
      tailWaitMs: 100,
      authenticate: tokenFileAuthenticator(
        'alice-token-0123456789 alice\nbob-token-0123456789 bob\n',
      ),
      onError: () => {},
    });
    const server = await gateway.listen(0, '127.0.0.1');
    onTestFinished(() => {
      // Idle kept-alive connections closed at once: no request is coming (a drain waits ~4 s).
      const drained = gateway.drain();
      server.closeIdleConnections();
      return drained;
    });
    urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  }
  return urls;
}

describe('durable tasks on Kafka: TTL and subjects', () => {
  it('a task past its TTL is failed on either gateway; another subject cannot see, cancel or listen to it', async () => {
    const urls = await authenticatedStack(1_500);
    const alice = { token: 'alice-token-0123456789' };
    const bob = { token: 'bob-token-0123456789' };
    const created = await rpc(
      urls[0]!,
      'tools/call',
      { name: 'count', arguments: { to: 10_000, delayMs: 20 } },
      alice,
    );
    const taskId = String(created.body.result?.['taskId']);
    expect(created.body.result).toMatchObject({ resultType: 'task', ttlMs: 1_500 });
    const notFound = { code: -32602, message: 'Failed to get task: Task not found' };
    expect((await rpc(urls[1]!, 'tasks/get', { taskId }, bob)).body.error).toEqual(notFound);
    expect((await rpc(urls[0]!, 'tasks/cancel', { taskId }, bob)).body.error?.code).toBe(-32602);
    const listen = await rpc(
      urls[1]!,
      'subscriptions/listen',
      { notifications: { taskIds: [taskId] } },
      bob,
    );
    expect(listen.text).toContain('"taskIds":[]');
    const done = await pollTask(urls, taskId, ['failed', 'completed', 'cancelled'], {
      ...alice,
      intervalMs: 200,
    });
    expect(done).toMatchObject({ status: 'failed', error: { code: -32603 } });
    expect(String(done['statusMessage'])).toMatch(/expired/);
  });
});

/** The `notifications/tasks/event`s of a `tasks/stream` response body. */
function taskEvents(text: string): Array<{ seq: number; type: string }> {
  return sseMessages(text)
    .filter((m) => m['method'] === 'notifications/tasks/event')
    .map((m) => m['params'] as { seq: number; type: string });
}
