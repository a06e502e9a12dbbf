import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { KafkaLog } from '@tidemark/kafka';
import { groupLag } from '@tidemark/kafka-fixtures';
import type { TopicNames } from '@tidemark/protocol';
import { describe, expect, inject, it, type TestContext } from 'vitest';
import { LogClient, outcome } from '@tidemark/fixtures/log-client';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

const brokers = inject('kafkaBrokers');
const script = fileURLToPath(new URL('../support/worker-process.ts', import.meta.url));

interface WorkerProcess {
  readonly child: ChildProcess;
  assigned: number[];
  readonly executions: Array<{ session?: string; stream: string; attempt: number; cause: string }>;
}

function startWorker(
  ctx: TestContext,
  prefix: string,
  group: string,
  env: NodeJS.ProcessEnv = {},
): WorkerProcess {
  const child = spawn(process.execPath, [script, brokers.join(','), prefix, group], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const worker: WorkerProcess = { child, assigned: [], executions: [] };
  createInterface({ input: child.stdout }).on('line', (line) => {
    const event = JSON.parse(line) as {
      assigned?: number[];
      execution?: WorkerProcess['executions'][number];
    };
    if (event.assigned !== undefined) worker.assigned = event.assigned;
    if (event.execution !== undefined) worker.executions.push(event.execution);
  });
  child.stderr.on('data', () => {});
  ctx.onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return worker;
}

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function untilAsync(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function provision(ctx: TestContext, label: string) {
  const { prefix, names } = await provisionTestTopics(ctx, brokers, { label, partitions: 2 });
  const log = new KafkaLog({ brokers });
  ctx.onTestFinished(() => log.close());
  return { prefix, names, log };
}

describe('worker processes on the real broker', () => {
  it('retries flaky_count as new generations (one reset per failed attempt), and never re-runs a finished call', async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'flaky');
    const worker = startWorker(ctx, prefix, `${prefix}workers`);
    await until(() => worker.assigned.length === 2, 30_000, 'the worker to own both partitions');
    const client = new LogClient(log, names, 2);
    ctx.onTestFinished(() => client.close());
    await client.initialize();
    const seen = await client.call('f', 'flaky_count', {
      to: 6,
      delayMs: 0,
      failAt: 4,
      failAttempts: 2,
    }).done;
    expect(outcome(seen)).toEqual({
      resets: ['generation-superseded', 'generation-superseded'],
      // 1, 2, 3 | 4, 5, 6 | 7 … 12: each re-run continues the numbering.
      progress: [7, 8, 9, 10, 11, 12],
      text: '1,2,3,4,5,6',
      isError: false,
    });
    expect(
      worker.executions.filter((e) => e.stream === 'rf').map((e) => [e.attempt, e.cause]),
    ).toEqual([
      [1, 'first'],
      [2, 'retry'],
      [3, 'retry'],
    ]);
    // A worker of another group reads every request again from the start, as after a crash before
    // any commit: the finished calls are not run again.
    const again = startWorker(ctx, prefix, `${prefix}other-group`);
    await until(
      () => again.assigned.length === 2,
      30_000,
      'the second group to own both partitions',
    );
    // Read up to the end (its commits reached every partition's end), then asked: nothing ran.
    await untilAsync(
      async () => (await groupLag(brokers, `${prefix}other-group`, names.requests, 2)) === 0n,
      'the second group to read every request',
    );
    expect(again.executions).toEqual([]);
  });

  it('kill -9 of the worker running a call: the other worker re-runs it as a new generation; the client is reset and gets the exact result', async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'workers');
    const group = `${prefix}workers`;
    const a = startWorker(ctx, prefix, group);
    await until(() => a.assigned.length === 2, 30_000, 'the first worker to own both partitions');
    const client = new LogClient(log, names, 2);
    ctx.onTestFinished(() => client.close());
    await client.initialize();

    const b = startWorker(ctx, prefix, group);
    await until(
      () => a.assigned.length === 1 && b.assigned.length === 1,
      30_000,
      'the two workers to share the partitions',
    );
    const owner = a.assigned.includes(client.partition) ? a : b;
    const survivor = owner === a ? b : a;

    let progress = 0;
    const watching = client.watch(5, (seen) => {
      if (seen.kind === 'message' && seen.message['method'] === 'notifications/progress')
        progress++;
    });
    const call = client.call(5, 'count', { to: 40, delayMs: 100 });
    await call.sent;
    await until(() => progress >= 5, 30_000, 'the call to be under way');
    owner.child.kill('SIGKILL');

    const seen = await watching.done;
    const result = outcome(seen);
    const numbers = Array.from({ length: 40 }, (_, i) => i + 1);
    expect(result.resets).toEqual(['generation-superseded']);
    // The re-run counts 1..40 again, its progress continuing where the dead worker's stopped.
    const before = outcome(
      seen.slice(
        0,
        seen.findIndex((s) => s.kind === 'reset'),
      ),
    ).progress;
    expect(result.progress).toEqual(numbers.map((n) => before.at(-1)! + n));
    expect(result.text).toBe(numbers.join(','));
    expect(owner.executions.filter((e) => e.stream === 'n5').map((e) => e.cause)).toEqual([
      'first',
    ]);
    expect(
      survivor.executions.filter((e) => e.stream === 'n5').map((e) => [e.attempt, e.cause]),
    ).toEqual([[2, 'takeover']]);
  });

  it('a worker joining under load: the partition it takes moves without a reset — the calls running there end where they ran', async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'scale-out');
    const group = `${prefix}workers`;
    const a = startWorker(ctx, prefix, group);
    await until(() => a.assigned.length === 2, 30_000, 'the first worker to own both partitions');
    const clients = await clientsOnEveryPartition(ctx, log, names);
    // Calls of ~3 s on both partitions, one of which the joining worker will take.
    const calls = clients.map((client) => client.call(1, 'count', { to: 30, delayMs: 100 }));
    await Promise.all(calls.map((call) => call.sent));
    const calls1 = (w: WorkerProcess) => w.executions.filter((e) => e.stream === 'n1');
    await until(() => calls1(a).length === 2, 30_000, 'both calls to start');
    const b = startWorker(ctx, prefix, group);
    await until(
      () => a.assigned.length === 1 && b.assigned.length === 1,
      30_000,
      'the two workers to share the partitions',
    );
    // A call on the moved partition, sent after the move: its new owner runs it at once.
    const moved = clients.find((client) => b.assigned.includes(client.partition))!;
    const after = await moved.call(2, 'count', { to: 3, delayMs: 0 }).done;
    expect(outcome(after).text).toBe('1,2,3');
    for (const call of calls) {
      expect(outcome(await call.done)).toEqual({
        resets: [],
        progress: Array.from({ length: 30 }, (_, i) => i + 1),
        text: Array.from({ length: 30 }, (_, i) => i + 1).join(','),
        isError: false,
      });
    }
    // Each long call ran once, on the first worker; the new owner ran only the new call.
    expect(calls1(a).map((e) => e.cause)).toEqual(['first', 'first']);
    expect(calls1(b)).toEqual([]);
    expect(b.executions.filter((e) => e.stream === 'n2').map((e) => e.cause)).toEqual(['first']);
  });

  it("the group's lag on requests — what KEDA's Kafka scaler reads — counts the calls not finished, then falls to 0", async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'lag');
    const group = `${prefix}workers`;
    const worker = startWorker(ctx, prefix, group);
    await until(() => worker.assigned.length === 2, 30_000, 'the worker to own both partitions');
    const client = new LogClient(log, names, 2);
    ctx.onTestFinished(() => client.close());
    await client.initialize();
    const calls = [1, 2, 3].map((id) => client.call(id, 'count', { to: 30, delayMs: 100 }));
    await Promise.all(calls.map((call) => call.sent));
    const lag = () => groupLag(brokers, group, names.requests, 2);
    const started = () => worker.executions.filter((e) => ['n1', 'n2', 'n3'].includes(e.stream));
    await until(() => started().length === 3, 30_000, 'the three calls to start');
    // Read and running, not finished: the worker commits up to its oldest unfinished request.
    await untilAsync(async () => (await lag()) === 3n, 'the lag to be the three running calls');
    expect(started().map((e) => e.cause)).toEqual(['first', 'first', 'first']);
    for (const call of calls) expect(outcome(await call.done).isError).toBe(false);
    await untilAsync(async () => (await lag()) === 0n, 'the lag to fall to 0');
  });

  it('SIGTERM drains a worker: its running calls end where they run, the other worker serves its partitions at once', async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'drain');
    const group = `${prefix}workers`;
    const a = startWorker(ctx, prefix, group);
    await until(() => a.assigned.length === 2, 30_000, 'the first worker to own both partitions');
    const b = startWorker(ctx, prefix, group);
    await until(
      () => a.assigned.length === 1 && b.assigned.length === 1,
      30_000,
      'the two workers to share the partitions',
    );
    const client = (await clientsOnEveryPartition(ctx, log, names)).find((c) =>
      a.assigned.includes(c.partition),
    )!;
    const running = client.call(1, 'count', { to: 30, delayMs: 100 });
    await running.sent;
    const ofCalls = (w: WorkerProcess) =>
      w.executions.filter((e) => e.stream.startsWith('n')).map((e) => [e.stream, e.cause]);
    await until(() => ofCalls(a).length === 1, 30_000, 'the call to start');
    const exited = new Promise((resolve) => a.child.once('exit', resolve));
    a.child.kill('SIGTERM');
    await until(() => b.assigned.length === 2, 10_000, 'the other worker to take both partitions');
    const sentAt = Date.now();
    const next = await client.call(2, 'count', { to: 3, delayMs: 0 }).done;
    const nextMs = Date.now() - sentAt;
    expect(outcome(next).text).toBe('1,2,3');
    expect(outcome(await running.done)).toMatchObject({ resets: [], isError: false });
    await exited;
    // The new call did not wait for the draining worker's call (~3 s) to end.
    expect(nextMs).toBeLessThan(2_500);
    expect(ofCalls(a)).toEqual([['n1', 'first']]);
    expect(ofCalls(b)).toEqual([['n2', 'first']]);
  });

  it('a worker killed -9 mid-handoff: its notice stops beating, and the next owner takes its calls over long before the handoff deadline', async (ctx) => {
    const { prefix, names, log } = await provision(ctx, 'handoff-kill');
    const group = `${prefix}workers`;
    // A handoff of 2 minutes: without the beat, the call would wait for all of it.
    const a = startWorker(ctx, prefix, group, { TIDEMARK_TEST_HANDOFF_MS: '120000' });
    await until(() => a.assigned.length === 2, 30_000, 'the first worker to own both partitions');
    const clients = await clientsOnEveryPartition(ctx, log, names);
    const calls = clients.map((client) => client.call(1, 'count', { to: 400, delayMs: 100 }));
    await Promise.all(calls.map((call) => call.sent));
    const calls1 = (w: WorkerProcess) => w.executions.filter((e) => e.stream === 'n1');
    await until(() => calls1(a).length === 2, 30_000, 'both calls to start');
    const b = startWorker(ctx, prefix, group);
    await until(() => b.assigned.length === 1, 30_000, 'the second worker to take a partition');
    const moved = clients.find((client) => b.assigned.includes(client.partition))!;
    // The first worker hands its call there off (it would run until its deadline): its notice —
    // "I run my calls of this partition until T" — is in the log, not yet released. Then it dies.
    await untilAsync(
      async () => (await handoffNotices(log, names, moved.partition)).some((n) => !n.released),
      'the first worker’s handoff notice',
    );
    a.child.kill('SIGKILL');
    // Well inside the 2-minute deadline: the next owner ran the moved partition's call again.
    await until(
      () => calls1(b).some((e) => e.session === moved.session && e.cause === 'takeover'),
      45_000,
      'the takeover of the handed-off call',
    );
  });
});

/** The handoff notices in `streams` on a partition, read raw (what the next owner reads). */
async function handoffNotices(
  log: KafkaLog,
  names: TopicNames,
  partition: number,
): Promise<Array<{ released: boolean }>> {
  const notices: Array<{ released: boolean }> = [];
  const { logStartOffset, highWatermark } = await log.offsets(names.streams, partition);
  for (let offset = logStartOffset; offset < highWatermark;) {
    const fetched = await log.fetch(names.streams, partition, offset, { maxWaitMs: 0 });
    for (const record of fetched.records)
      if (record.key?.startsWith('handoff:') === true && record.value !== null)
        notices.push(JSON.parse(Buffer.from(record.value).toString()) as { released: boolean });
    if (fetched.records.length === 0) break;
    offset = fetched.nextOffset;
  }
  return notices;
}

/** Initialized clients, at least one whose session is on each partition of `requests`. */
async function clientsOnEveryPartition(
  ctx: TestContext,
  log: KafkaLog,
  names: TopicNames,
): Promise<LogClient[]> {
  const byPartition = new Map<number, LogClient>();
  while (byPartition.size < 2) {
    const client = new LogClient(log, names, 2);
    if (byPartition.has(client.partition)) continue;
    ctx.onTestFinished(() => client.close());
    await client.initialize();
    byPartition.set(client.partition, client);
  }
  return [...byPartition.values()];
}
