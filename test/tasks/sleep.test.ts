import counting from '@tidemark/examples/counting';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, it, type TestContext } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// Durable sleep (`ex.sleep`) on the stateless lane and in tasks, through a gateway on the embedded
// log: `pay` charges, sleeps `receiptAfterMs`, then sends the receipt. Asleep, a task holds no
// slot — more tasks sleep at once than the worker has task slots, and a plain call behind them is
// answered at once — and each wakes on time with its charge replayed, made once.

const TASKS = 60;
const SLEEP_MS = 6_000;

/** Each test's own stack (the tests run at once: each stops its own). */
async function setup({ onTestFinished }: TestContext) {
  const api = new PretendPayments(undefined);
  const stack = await embeddedStack({
    modules: [paymentsModule(api), counting],
    // Tasks asleep 5 s or more leave memory (the default is a minute): the path a long sleep takes.
    worker: {
      maxConcurrentTasks: 4,
      maxTasksPerSubject: 4,
      maxConcurrentCalls: 4,
      sleepInMemoryMs: 5_000,
    },
  });
  onTestFinished(() => stack.stop());
  return { api, url: stack.gateways[0]!.url };
}

const pay = (i: number, receiptAfterMs: number) => ({
  name: 'pay',
  arguments: { to: `t${i}@example.com`, amountCents: 100 + i, receiptAfterMs },
});

describe.concurrent('durable sleep on the stateless lane and in tasks (embedded log)', () => {
  it(`${TASKS} tasks asleep at once on 4 task slots: a plain call is answered meanwhile; each wakes on time, charged once`, async (context) => {
    const { api, url } = await setup(context);
    const created = await Promise.all(
      Array.from({ length: TASKS }, (_, i) => rpc(url, 'tools/call', pay(i, SLEEP_MS))),
    );
    const ids = created.map(({ body }) => String(body.result?.['taskId']));
    // Every task got to its sleep (its charge made): none holds a slot while it sleeps.
    await expect
      .poll(() => api.entries().filter((e) => e.kind === 'charge').length, { timeout: 10_000 })
      .toBe(TASKS);
    const asked = Date.now();
    const plain = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2 } },
      { tasks: false },
    );
    expect(Date.now() - asked).toBeLessThan(SLEEP_MS);
    expect(JSON.stringify(plain.body.result)).toContain('1,2');

    const done = await Promise.all(
      ids.map((id) => pollTask([url], id, ['completed'], { intervalMs: 200, timeoutMs: 30_000 })),
    );
    expect(done.map((task) => task['status'])).toEqual(ids.map(() => 'completed'));
    const entries = api.entries();
    for (let i = 0; i < TASKS; i++) {
      const to = `t${i}@example.com`;
      const charges = entries.filter((e) => e.to === to && e.kind === 'charge');
      const receipts = entries.filter((e) => e.to === to && e.kind === 'receipt');
      expect(charges).toHaveLength(1);
      expect(receipts).toHaveLength(1);
      expect(receipts[0]!.atMs - charges[0]!.atMs).toBeGreaterThanOrEqual(SLEEP_MS);
    }
  });

  it('a plain stateless call that sleeps answers after its sleep, its charge made once', async (context) => {
    const { api, url } = await setup(context);
    const started = Date.now();
    const answer = await rpc(url, 'tools/call', pay(1, 1_500), { tasks: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(answer.body.result).toMatchObject({
      structuredContent: { chargeId: expect.any(String) as unknown },
    });
    expect(api.entries().map((e) => [e.kind, e.fresh])).toEqual([
      ['charge', true],
      ['receipt', true],
    ]);
  });

  it('a task cancelled while it sleeps off memory is cancelled at once, and its tool never runs again', async (context) => {
    const { api, url } = await setup(context);
    const created = await rpc(url, 'tools/call', pay(7, SLEEP_MS));
    const taskId = String(created.body.result?.['taskId']);
    await expect.poll(() => api.entries().length).toBe(1);
    const cancelled = await rpc(url, 'tasks/cancel', { taskId });
    expect(cancelled.body.error).toBeUndefined();
    const task = await pollTask([url], taskId, ['cancelled'], { timeoutMs: 5_000 });
    expect(task['status']).toBe('cancelled');
    await new Promise((resolve) => setTimeout(resolve, SLEEP_MS + 500));
    expect(api.entries().map((e) => e.kind)).toEqual(['charge']);
  });
});
