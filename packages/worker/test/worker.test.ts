import { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { StreamHeadStore } from '@tidemark/log';
import {
  ErrorCodes,
  requestStreamId,
  TidemarkError,
  topicNames,
  type TopicNames,
} from '@tidemark/protocol';
import {
  currentExecution,
  defineToolModule,
  Worker,
  type ExecutionEnd,
  type ToolLogger,
  type WorkerOptions,
} from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { LogClient, outcome } from '@tidemark/fixtures/log-client';

const PARTITIONS = 2;

function setup() {
  const log = new EmbeddedLog({ path: ':memory:' });
  const topics: TopicNames = topicNames('t.');
  log.provisionTopics(topics, { partitions: PARTITIONS });
  const executions: Array<{ stream: string; attempt: number; cause: string }> = [];
  const workers: Worker[] = [];
  const startWorker = async (extra: Partial<WorkerOptions> = {}) => {
    const worker = new Worker({
      log,
      topics,
      modules: [counting, interactive],
      pollMs: 50,
      commitIntervalMs: 50,
      onExecution: (e) => executions.push(e),
      onProblem: () => {},
      ...extra,
    });
    await worker.start();
    workers.push(worker);
    return worker;
  };
  const client = () => {
    const c = new LogClient(log, topics, PARTITIONS);
    onTestFinished(() => c.close());
    return c;
  };
  onTestFinished(async () => {
    for (const worker of workers) await worker.stop();
    await log.close();
  });
  return { log, topics, startWorker, client, executions };
}

describe('the worker on the embedded log', () => {
  it('runs a tool call: stamped progress 1..n, then the exact result, the stream terminal', async () => {
    const { startWorker, client } = setup();
    await startWorker();
    const c = client();
    await c.initialize();
    const seen = await c.call(1, 'count', { to: 20, delayMs: 0 }).done;
    expect(outcome(seen)).toEqual({
      resets: [],
      progress: Array.from({ length: 20 }, (_, i) => i + 1),
      text: Array.from({ length: 20 }, (_, i) => i + 1).join(','),
      isError: false,
    });
  });

  it('retries flaky_count as new generations: one reset per failed attempt, then the exact result', async () => {
    const { startWorker, client, executions } = setup();
    await startWorker();
    const c = client();
    await c.initialize();
    const seen = await c.call('f', 'flaky_count', { to: 5, delayMs: 0, failAt: 3, failAttempts: 2 })
      .done;
    expect(outcome(seen)).toEqual({
      resets: ['generation-superseded', 'generation-superseded'],
      // Each execution fails on reaching 3 (after writing 1, 2); the numbering goes on across
      // them, so progress never goes back: 1, 2 | 3, 4 | 5 … 9.
      progress: [5, 6, 7, 8, 9],
      text: '1,2,3,4,5',
      isError: false,
    });
    expect(executions.filter((e) => e.stream === 'rf').map((e) => [e.attempt, e.cause])).toEqual([
      [1, 'first'],
      [2, 'retry'],
      [3, 'retry'],
    ]);
  });

  it("reports each execution's end: the tool, its outcome, its attempt and the error", async () => {
    const { startWorker, client } = setup();
    const ends: ExecutionEnd[] = [];
    await startWorker({ onExecutionEnd: (end) => ends.push(end) });
    const c = client();
    await c.initialize();
    await c.call('f', 'flaky_count', { to: 3, delayMs: 0, failAt: 2, failAttempts: 1 }).done;
    await c.call('g', 'flaky_count', { to: 3, delayMs: 0, failAt: 2, failAttempts: 9 }).done;
    const summary = ends.map((e) => [e.tool, e.outcome, e.execution?.stream, e.execution?.attempt]);
    expect(summary).toEqual([
      ['flaky_count', 'retrying', 'rf', 1],
      ['flaky_count', 'ok', 'rf', 2],
      ...[1, 2, 3, 4].map((attempt) => ['flaky_count', 'retrying', 'rg', attempt]),
      ['flaky_count', 'failed', 'rg', 5],
    ]);
    expect(String(ends.at(-1)?.error)).toContain('flaky_count failed at 2');
    expect(ends.every((e) => e.durationMs >= 0)).toBe(true);
  });

  it('gives each execution a logger stamped with the tool, session, stream and attempt', async () => {
    const { startWorker, client } = setup();
    const lines: Array<Record<string, unknown>> = [];
    const capture = (bindings: Record<string, unknown>): ToolLogger => {
      const write = (first: Record<string, unknown> | string, msg?: string) =>
        void lines.push({
          ...bindings,
          ...(typeof first === 'string' ? { msg: first } : { ...first, msg }),
        });
      return {
        debug: write,
        info: write,
        warn: write,
        error: write,
        child: (more) => capture({ ...bindings, ...more }),
      };
    };
    const logging = defineToolModule({
      name: 'logging',
      register(server) {
        server.registerTool('lookup', { description: 'logs what it does' }, () => {
          currentExecution()?.log?.info({ city: 'Oslo' }, 'looking up');
          return { content: [{ type: 'text', text: 'ok' }] };
        });
      },
    });
    await startWorker({ modules: [logging], logger: capture({}) });
    const c = client();
    await c.initialize();
    await c.call('l', 'lookup', {}).done;
    expect(lines).toEqual([
      expect.objectContaining({
        tool: 'lookup',
        stream: 'rl',
        attempt: 1,
        city: 'Oslo',
        msg: 'looking up',
      }),
    ]);
    expect(lines[0]!['session']).toEqual(expect.any(String));
  });

  it('a worker taking over re-runs an unfinished call as a new generation: the client is reset, then gets the exact result', async () => {
    const { startWorker, client, executions } = setup();
    // No handoff: the stopping worker gives its calls up at once.
    const first = await startWorker({ handoffTimeoutMs: 0 });
    const c = client();
    await c.initialize();
    let progressSeen = 0;
    const watching = c.watch(7, (s) => {
      if (s.kind === 'message' && s.message['method'] === 'notifications/progress') progressSeen++;
    });
    const call = c.call(7, 'count', { to: 30, delayMs: 20 });
    await call.sent;
    while (progressSeen < 5) await new Promise((resolve) => setTimeout(resolve, 10));
    await first.stop(); // its calls end unfinished; the group hands the partitions on
    await startWorker();
    const seen = await watching.done;
    const result = outcome(seen);
    expect(result.resets).toEqual(['generation-superseded']);
    // The new execution counts 1..30 again; its progress continues the first one's numbering.
    const firstReset = seen.findIndex((s) => s.kind === 'reset');
    const before = outcome(seen.slice(0, firstReset)).progress;
    expect(before.length).toBeGreaterThanOrEqual(5);
    expect(result.progress).toEqual(Array.from({ length: 30 }, (_, i) => before.at(-1)! + i + 1));
    expect(result.text).toBe(Array.from({ length: 30 }, (_, i) => i + 1).join(','));
    expect(executions.filter((e) => e.stream === 'n7').map((e) => e.cause)).toEqual([
      'first',
      'takeover',
    ]);
  });

  it('a request delivered twice just before a takeover runs once on its next owner, not once per copy', async () => {
    const { startWorker, client, executions } = setup();
    const first = await startWorker({ handoffTimeoutMs: 0 });
    const c = client();
    await c.initialize();
    const call = c.call(8, 'count', { to: 20, delayMs: 20 });
    await call.sent;
    while (!executions.some((e) => e.stream === 'n8'))
      await new Promise((resolve) => setTimeout(resolve, 10));
    // The same request again (a keyed request passed on twice: its key's worker died before its
    // commit), still unread when the partition moves: both copies reach the next owner at once.
    await c.call(8, 'count', { to: 20, delayMs: 20 }).sent;
    await first.stop();
    await startWorker();
    const result = outcome(await call.done);
    expect(result.text).toBe(Array.from({ length: 20 }, (_, i) => i + 1).join(','));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(executions.filter((e) => e.stream === 'n8').map((e) => e.cause)).toEqual([
      'first',
      'takeover',
    ]);
  });

  it('a stopping worker hands its calls over: one that ends within the handoff timeout ends where it ran, one that outlives it is taken over', async () => {
    const { startWorker, client, executions } = setup();
    const first = await startWorker({ handoffTimeoutMs: 1_500 });
    const second = await startWorker({ handoffTimeoutMs: 1_500 });
    expect(second.assignedPartitions).toEqual([]);
    const c = client();
    await c.initialize();
    let progressSeen = 0;
    const counting = (s: { kind: string; message?: Record<string, unknown> }) => {
      if (s.kind === 'message' && s.message?.['method'] === 'notifications/progress')
        progressSeen++;
    };
    const short = c.watch('short', counting);
    const long = c.watch('long', counting);
    const shortCall = c.call('short', 'count', { to: 20, delayMs: 25 }); // ~0.5 s
    const longCall = c.call('long', 'count', { to: 100, delayMs: 40 }); // ~4 s
    await Promise.all([shortCall.sent, longCall.sent]);
    while (progressSeen < 4) await new Promise((resolve) => setTimeout(resolve, 10));
    const stopping = Date.now();
    await first.stop();
    const stoppedAfterMs = Date.now() - stopping;
    expect(second.assignedPartitions).toEqual([0, 1]);
    const [shortSeen, longSeen] = await Promise.all([short.done, long.done]);
    expect(outcome(shortSeen)).toEqual({
      resets: [],
      progress: Array.from({ length: 20 }, (_, i) => i + 1),
      text: Array.from({ length: 20 }, (_, i) => i + 1).join(','),
      isError: false,
    });
    expect(outcome(longSeen).resets).toEqual(['generation-superseded']);
    expect(outcome(longSeen).text).toBe(Array.from({ length: 100 }, (_, i) => i + 1).join(','));
    expect(
      executions.filter((e) => e.stream === requestStreamId('short')).map((e) => e.cause),
    ).toEqual(['first']);
    expect(
      executions.filter((e) => e.stream === requestStreamId('long')).map((e) => e.cause),
    ).toEqual(['first', 'takeover']);
    // It waited for the long call up to the handoff timeout, not for its end.
    expect(stoppedAfterMs).toBeGreaterThanOrEqual(1_000);
    expect(stoppedAfterMs).toBeLessThan(3_500);
  });

  it('a restarted worker reads each partition from its committed offset, not from the start', async () => {
    const { log, topics, startWorker, client } = setup();
    const first = await startWorker();
    const c = client();
    await c.initialize();
    for (let i = 1; i <= 5; i++) await c.call(i, 'count', { to: 3, delayMs: 0 }).done;
    await first.stop(); // commits what finished
    const reads: Array<[number, bigint]> = [];
    const fetch = log.fetch.bind(log);
    log.fetch = (topic, partition, from, options) => {
      if (topic === topics.requests) reads.push([partition, from]);
      return fetch(topic, partition, from, options);
    };
    const ends = await Promise.all(
      Array.from(
        { length: PARTITIONS },
        async (_, p) => (await log.offsets(topics.requests, p)).highWatermark,
      ),
    );
    await startWorker();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reads.length).toBeGreaterThan(0);
    // Every read starts at or after where the first worker had committed: nothing is read again.
    for (const [partition, from] of reads) expect(from).toBeGreaterThanOrEqual(ends[partition]!);
  });

  it('a write the log refuses does not leave the call hanging: the client is reset, then gets the result in a new generation', async () => {
    const { log, topics, startWorker, client, executions } = setup();
    const problems: string[] = [];
    await startWorker({ onProblem: (problem) => problems.push(problem) });
    // The log refuses one write of the call's stream (its 5th event), as a broker does when it
    // loses its leader or its in-sync replicas.
    const append = log.append.bind(log);
    let refused = 0;
    log.append = (topic, records) => {
      const fifth = records.some((record) =>
        (record.headers ?? []).some(([name, value]) => name === 'tm-seq' && value === '5'),
      );
      if (topic === topics.events && fifth && refused++ === 0)
        return Promise.reject(
          new TidemarkError(ErrorCodes.logUnavailable, 'NOT_ENOUGH_REPLICAS', { retryable: true }),
        );
      return append(topic, records);
    };
    const c = client();
    await c.initialize();
    const seen = await c.call(3, 'count', { to: 10, delayMs: 5 }).done;
    const result = outcome(seen);
    expect(refused).toBeGreaterThan(0);
    expect(result.resets).toEqual(['generation-superseded']);
    expect(result.text).toBe('1,2,3,4,5,6,7,8,9,10');
    expect(result.isError).toBe(false);
    expect(executions.filter((e) => e.stream === 'n3').map((e) => e.cause)).toEqual([
      'first',
      'retry',
    ]);
    expect(problems.some((p) => p.includes('written again as a new generation'))).toBe(true);
  });

  it('a call that keeps dying with its worker is answered with an error after maxExecutionsPerCall, not run forever', async () => {
    const { startWorker, client, executions } = setup();
    const first = await startWorker({ maxExecutionsPerCall: 1, handoffTimeoutMs: 0 });
    const c = client();
    await c.initialize();
    let progressSeen = 0;
    let final: Record<string, unknown> | undefined;
    const watching = c.watch(9, (s) => {
      if (s.kind === 'message' && s.message['method'] === 'notifications/progress') progressSeen++;
      if (s.kind === 'message' && s.final) final = s.message;
    });
    await c.call(9, 'count', { to: 1_000, delayMs: 20 }).sent;
    while (progressSeen < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    await first.stop(); // as if the call had killed it
    await startWorker({ maxExecutionsPerCall: 1 });
    await watching.done;
    expect(final).toMatchObject({
      id: 9,
      error: {
        code: -32603,
        message:
          'Internal error: the call was started 1 times without finishing (limit 1); it is not run again',
      },
    });
    expect(executions.filter((e) => e.stream === 'n9').map((e) => e.cause)).toEqual(['first']);
  });

  it("does not start when a tool module fails its register or takes another module's tool name", async () => {
    const { startWorker } = setup();
    const failing = {
      name: 'needs-key',
      register: () => Promise.reject(new Error('missing API_KEY')),
    };
    await expect(startWorker({ modules: [counting, failing] })).rejects.toMatchObject({
      code: ErrorCodes.toolModule,
      message: 'tool module needs-key: register failed: missing API_KEY',
    });
    const again = { ...counting, name: 'counting-again' };
    await expect(startWorker({ modules: [counting, again] })).rejects.toMatchObject({
      code: ErrorCodes.toolModule,
      message: expect.stringContaining(
        "counting-again: register failed: its tool count is also counting's",
      ) as unknown,
    });
  });

  it('does not start on topics made before the audit trail: it names the topic to create', async () => {
    const { startWorker } = setup();
    await expect(
      startWorker({ topics: { ...topicNames('t.'), audit: 't.audit-never-made' } }),
    ).rejects.toMatchObject({
      code: ErrorCodes.topicMismatch,
      message: expect.stringMatching(
        /^topic t\.audit-never-made \(the audit trail, new in 0\.2\.0\) cannot be read: create it with `tidemark topics create`/,
      ) as unknown,
    });
  });

  it('refuses a negative or fractional handoff timeout or in-memory sleep up front; 0 is a choice', async () => {
    const { startWorker } = setup();
    for (const name of ['handoffTimeoutMs', 'sleepInMemoryMs'])
      for (const bad of [-1, 0.5])
        await expect(startWorker({ [name]: bad })).rejects.toThrow(
          `${name}: expected a whole number of milliseconds, 0 or more`,
        );
    await startWorker({ handoffTimeoutMs: 0, sleepInMemoryMs: 0 });
  });

  it('never runs a finished call again when its request is delivered again', async () => {
    const { log, topics, startWorker, client, executions } = setup();
    await startWorker();
    const c = client();
    await c.initialize();
    await c.call(1, 'count', { to: 3, delayMs: 0 }).done;
    // The worker writes the finished head just after the final record the client read.
    const heads = new StreamHeadStore({ port: log, topics, partitionCount: PARTITIONS });
    while ((await heads.get(c.session, requestStreamId(1)))?.terminal === undefined)
      await new Promise((resolve) => setTimeout(resolve, 10));
    // Another group reads every request from the start, as after a crash before any commit.
    await startWorker({ group: 'another-group' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(executions.filter((e) => e.stream === 'n1')).toHaveLength(1);
  });

  it('cancellation stops the tool within a step and ends the stream with a terminal record', async () => {
    const { startWorker, client } = setup();
    await startWorker();
    const c = client();
    await c.initialize();
    let progressSeen = 0;
    const call = c.call(9, 'count', { to: 1000, delayMs: 50 });
    const watching = c.watch(9, (s) => {
      if (s.kind === 'message' && s.message['method'] === 'notifications/progress') progressSeen++;
    });
    while (progressSeen < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    const atCancel = progressSeen;
    await c.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 9, reason: 'user' },
    });
    const seen = await watching.done;
    await call.done;
    expect(seen.at(-1)).toMatchObject({ kind: 'message', final: true, message: {} });
    // The step under way when the cancellation arrived may still report; nothing after it.
    expect(outcome(seen).progress.length).toBeLessThanOrEqual(atCancel + 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(outcome(seen).progress.length).toBeLessThanOrEqual(atCancel + 1);
  });

  it("a cancelled call's compensations run, the last first; a worker that stops undoes nothing (the next owner goes on)", async () => {
    const done: string[] = [];
    const booking = defineToolModule({
      name: 'booking',
      register: (server) => {
        server.registerTool('book', { description: 'books a seat' }, async (ctx) => {
          const ex = currentExecution()!;
          await ex.step('reserve', () => void done.push('reserve'));
          ex.compensate('release', () => void done.push('release'));
          await ex.step('charge', () => void done.push('charge'));
          ex.compensate('refund', () => void done.push('refund'));
          await new Promise((_, reject) =>
            ctx.mcpReq.signal.addEventListener('abort', () => reject(new Error('stopped'))),
          );
          return { content: [] };
        });
      },
    });
    const { startWorker, client } = setup();
    const worker = await startWorker({ modules: [booking], handoffTimeoutMs: 0 });
    const c = client();
    await c.initialize();
    c.call(1, 'book', {});
    await expect.poll(() => done).toEqual(['reserve', 'charge']);
    await c.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    await expect.poll(() => done).toEqual(['reserve', 'charge', 'refund', 'release']);

    c.call(2, 'book', {});
    await expect.poll(() => done.length).toBe(6);
    await worker.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(done.slice(4)).toEqual(['reserve', 'charge']);
  });

  it('carries an elicitation to the client through events and its answer back through requests', async () => {
    const { startWorker, client } = setup();
    await startWorker();
    const c = client();
    await c.initialize();
    const answered = new Set<unknown>();
    const watching = c.watch('del', (s) => {
      if (
        s.kind === 'message' &&
        s.message['method'] === 'elicitation/create' &&
        !answered.has(s.message['id'])
      ) {
        answered.add(s.message['id']);
        void c.send({
          jsonrpc: '2.0',
          id: s.message['id'],
          result: { action: 'accept', content: { confirm: true } },
        });
      }
    });
    const call = c.call('del', 'confirm_delete', { path: '/data/old.csv' });
    const seen = await watching.done;
    await call.done;
    expect(outcome(seen).text).toBe('deleted /data/old.csv');
  });

  it('answers a call beyond the per-session limit with an error, and keeps serving other sessions', async () => {
    const { startWorker, client } = setup();
    await startWorker({ maxConcurrentCallsPerSession: 1 });
    const busy = client();
    await busy.initialize();
    const long = busy.call('long', 'count', { to: 50, delayMs: 20 });
    await long.sent;
    const refused = await busy.call('second', 'count', { to: 2, delayMs: 0 }).done;
    expect(refused.at(-1)).toMatchObject({
      kind: 'message',
      final: true,
      message: { error: { code: -32000 } },
    });
    const other = client();
    await other.initialize();
    expect(outcome(await other.call(1, 'count', { to: 2, delayMs: 0 }).done).text).toBe('1,2');
    expect(outcome(await long.done).text).toBe(
      Array.from({ length: 50 }, (_, i) => i + 1).join(','),
    );
  });

  it('restores a session it never saw from the sessions topic (another worker initialized it)', async () => {
    const { startWorker, client } = setup();
    const first = await startWorker();
    const c = client();
    await c.initialize();
    await first.stop();
    await startWorker();
    const seen = await c.call(2, 'count', { to: 3, delayMs: 0 }).done;
    expect(outcome(seen).text).toBe('1,2,3');
  });
});
