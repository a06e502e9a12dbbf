import { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import { RequestWriter } from '@tidemark/log';
import {
  asRoutingKey,
  requestStreamId,
  topicNames,
  WAKE_METHOD,
  type RequestRecord,
  type TopicNames,
} from '@tidemark/protocol';
import {
  currentExecution,
  defineToolModule,
  Worker,
  type ExecutionEnd,
  type WorkerOptions,
} from '@tidemark/worker';
import { describe, expect, it, type TestContext } from 'vitest';
import * as z from 'zod';
import { LogClient, outcome } from '@tidemark/fixtures/log-client';

// Durable sleep (`ex.sleep`) on the session lane of the embedded log: the call gives its slot back
// while it sleeps, runs again on time with its steps replayed, stops sleeping when cancelled, and
// is woken by the next worker when its own stops.

const PARTITIONS = 2;

/** A tool that takes a step, sleeps `ms`, takes another: each step's runs counted here. */
function napping() {
  const runs = { before: 0, after: 0, invocations: 0 };
  const module = defineToolModule({
    name: 'napping',
    register: (server) => {
      server.registerTool(
        'nap',
        { description: 'sleeps between two steps', inputSchema: z.object({ ms: z.number() }) },
        async ({ ms }) => {
          const ex = currentExecution()!;
          runs.invocations++;
          const at = await ex.step('before', () => (runs.before++, Date.now()));
          await ex.sleep('nap', ms);
          const woke = await ex.step('after', () => (runs.after++, Date.now()));
          return { content: [{ type: 'text', text: String(woke - at) }] };
        },
      );
    },
  });
  return { module, runs };
}

/** Each test's own log and workers (the tests run at once: each stops its own). */
function setup({ onTestFinished }: TestContext) {
  const log = new EmbeddedLog({ path: ':memory:' });
  const topics: TopicNames = topicNames('t.');
  log.provisionTopics(topics, { partitions: PARTITIONS });
  const workers: Worker[] = [];
  const ends: ExecutionEnd['outcome'][] = [];
  const startWorker = async (extra: Partial<WorkerOptions> & Pick<WorkerOptions, 'modules'>) => {
    const worker = new Worker({
      log,
      topics,
      pollMs: 20,
      commitIntervalMs: 50,
      onProblem: () => {},
      onExecutionEnd: (end) => ends.push(end.outcome),
      ...extra,
    });
    await worker.start();
    workers.push(worker);
    return worker;
  };
  const client = async () => {
    const c = new LogClient(log, topics, PARTITIONS);
    onTestFinished(() => c.close());
    await c.initialize();
    return c;
  };
  onTestFinished(async () => {
    for (const worker of workers) await worker.stop();
    await log.close();
  });
  return { startWorker, client, ends, log, topics };
}

describe.concurrent('durable sleep on the session lane (embedded log)', () => {
  it('gives its slot back while it sleeps: a call behind it is answered at once; it wakes on time, each step run once', async (context) => {
    const { module, runs } = napping();
    const { startWorker, client, ends } = setup(context);
    await startWorker({ modules: [module, counting], maxConcurrentCalls: 1 });
    const c = await client();
    const started = Date.now();
    const nap = c.call('nap', 'nap', { ms: 1_500 }).done;
    await expect.poll(() => ends).toContain('asleep');
    // The one slot is free: a plain call runs now, not after the nap.
    const other = await c.call('other', 'count', { to: 2, delayMs: 0 }).done;
    expect(outcome(other).text).toBe('1,2');
    expect(Date.now() - started).toBeLessThan(1_500);
    const seen = await nap;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    const slept = Number(outcome(seen).text);
    expect(slept).toBeGreaterThanOrEqual(1_500);
    expect(outcome(seen).resets).toEqual([]);
    expect(runs).toEqual({ before: 1, after: 1, invocations: 2 });
  });

  it("an operator's wake (`tidemark calls wake`) ends a session call's sleep now, its steps run once", async (context) => {
    const { module, runs } = napping();
    const { startWorker, client, ends, log, topics } = setup(context);
    await startWorker({ modules: [module] });
    const c = await client();
    const started = Date.now();
    const nap = c.call('nap', 'nap', { ms: 600_000 }).done;
    await expect.poll(() => ends).toContain('asleep');
    const writer = new RequestWriter({
      log,
      topic: topics.requests,
      partitionCount: PARTITIONS,
      keyring: undefined,
    });
    const wake: RequestRecord = {
      lane: 'stateless',
      key: asRoutingKey(c.session),
      message: {
        jsonrpc: '2.0',
        id: 'tm-wake-1',
        method: WAKE_METHOD,
        params: { journal: requestStreamId('nap') },
      },
      classification: null,
      subject: undefined,
    };
    await writer.write(c.session, [wake]);
    const seen = await nap;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcome(seen).resets).toEqual([]);
    expect(runs).toEqual({ before: 1, after: 1, invocations: 2 });
  });

  it('a call cancelled while it sleeps ends then, and never wakes', async (context) => {
    const { module, runs } = napping();
    const { startWorker, client, ends } = setup(context);
    await startWorker({ modules: [module] });
    const c = await client();
    const nap = c.call('nap', 'nap', { ms: 1_200 }).done;
    await expect.poll(() => ends).toContain('asleep');
    await c.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'nap' },
    });
    const seen = await nap;
    expect(seen.at(-1)).toMatchObject({ kind: 'message', final: true });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(runs).toEqual({ before: 1, after: 0, invocations: 1 });
  });

  it('a worker that stops while a call sleeps leaves the wake to the next: it wakes there on time, the first step replayed', async (context) => {
    const { module, runs } = napping();
    const { startWorker, client, ends } = setup(context);
    const first = await startWorker({ modules: [module], handoffTimeoutMs: 0 });
    const c = await client();
    const started = Date.now();
    const nap = c.call('nap', 'nap', { ms: 3_000 }).done;
    await expect.poll(() => ends).toContain('asleep');
    // The drain does not wait for a sleeping call: nothing of it runs.
    const stopping = Date.now();
    await first.stop();
    expect(Date.now() - stopping).toBeLessThan(1_000);
    await startWorker({ modules: [module] });
    const seen = await nap;
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(Number(outcome(seen).text)).toBeGreaterThanOrEqual(3_000);
    // The next worker ran the call as its next generation: `before` replayed, the nap slept on.
    expect(runs).toEqual({ before: 1, after: 1, invocations: 3 });
  });
});
