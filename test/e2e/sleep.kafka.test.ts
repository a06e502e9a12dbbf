import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT } from '@tidemark/cli';
import { PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { Cluster, sleep } from './cluster.js';
import { runTidemark } from '../support/cli.js';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// Durable sleep on a real broker: a task charges, then sleeps 5 s (`ex.sleep`); every worker
// process is killed (-9) while it sleeps, and a worker started afterwards — which never saw the
// call — wakes it from the journal within a second of its time: the receipt is sent then, the
// charge replayed, made once. And a signal (`ex.signal`, the approval example) POSTed while every
// worker is down is kept in the log (202) and resumes its task on the worker started afterwards.

const brokers = inject('kafkaBrokers');

const SLEEP_MS = 5_000;

/** `tidemark calls list` against the cluster's topics: its lines. */
async function callsList(prefix: string): Promise<string[]> {
  const { code, out } = await runTidemark([
    'calls',
    'list',
    '--brokers',
    brokers.join(','),
    '--prefix',
    prefix,
  ]);
  expect(code, out.join('\n')).toBe(EXIT.ok);
  return out;
}

describe('durable sleep on Kafka: a kill -9 of every worker does not lose the wake', () => {
  it('a task asleep for 5 s wakes on a new worker within a second of its time, its charge made once', async () => {
    const ledger = join(mkdtempSync(join(tmpdir(), 'tidemark-sleep-')), 'payments.jsonl');
    process.env['PAYMENTS_LEDGER'] = ledger;
    // A short group session: the dead workers' partitions are given to the new one in 2 s.
    const c = await Cluster.start({
      brokers,
      label: 'sleep',
      gateways: 1,
      workers: 2,
      groupSessionTimeoutMs: 2_000,
    });
    onTestFinished(() => c.stop());
    const api = new PretendPayments(ledger);
    const url = `http://127.0.0.1:${c.gateways[0]!.port}/mcp`;
    const created = await rpc(url, 'tools/call', {
      name: 'pay',
      arguments: { to: 'ada@example.com', amountCents: 4200, receiptAfterMs: SLEEP_MS },
    });
    const taskId = String(created.body.result?.['taskId']);
    const deadline = Date.now() + 30_000;
    while (!c.stepLines().some((s) => s.step === 'sleep before receipt')) {
      if (Date.now() > deadline) throw new Error('the task never went to sleep');
      await sleep(20);
    }
    for (const worker of [...c.workers]) await c.kill(worker, 'SIGKILL');
    await c.startWorker();
    const done = await pollTask([url], taskId, ['completed'], { timeoutMs: 60_000 });
    expect(done['result']).toMatchObject({
      structuredContent: { chargeId: expect.any(String) as unknown },
    });
    const entries = api.entries();
    const charges = entries.filter((e) => e.kind === 'charge');
    const receipts = entries.filter((e) => e.kind === 'receipt');
    expect(charges).toEqual([expect.objectContaining({ fresh: true })]);
    expect(receipts).toEqual([expect.objectContaining({ fresh: true })]);
    // The wake time is journaled just after the charge: the receipt goes on time, not early.
    const lateMs = receipts[0]!.atMs - (charges[0]!.atMs + SLEEP_MS);
    expect(lateMs).toBeGreaterThanOrEqual(0);
    expect(lateMs).toBeLessThan(1_000);
  });

  it('a rolling restart of every worker while 100 tasks sleep loses none: each wakes and charges once', async () => {
    const ledger = join(mkdtempSync(join(tmpdir(), 'tidemark-sleep-')), 'payments.jsonl');
    process.env['PAYMENTS_LEDGER'] = ledger;
    const c = await Cluster.start({ brokers, label: 'sleep-roll', gateways: 1, workers: 2 });
    onTestFinished(() => c.stop());
    const api = new PretendPayments(ledger);
    const url = `http://127.0.0.1:${c.gateways[0]!.port}/mcp`;
    const created = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        rpc(url, 'tools/call', {
          name: 'pay',
          arguments: { to: `t${i}@example.com`, amountCents: 100 + i, receiptAfterMs: 8_000 },
        }),
      ),
    );
    const ids = created.map(({ body }) => String(body.result?.['taskId']));
    await expect
      .poll(() => api.entries().filter((e) => e.kind === 'charge').length, { timeout: 30_000 })
      .toBe(100);
    // The upgrade: each worker in turn replaced by a new one, the old drained (SIGTERM).
    for (const old of [...c.workers]) {
      await c.startWorker();
      await c.kill(old, 'SIGTERM');
    }
    const done = await Promise.all(
      ids.map((id) => pollTask([url], id, ['completed'], { timeoutMs: 60_000, intervalMs: 500 })),
    );
    expect(done.map((task) => task['status'])).toEqual(ids.map(() => 'completed'));
    const entries = api.entries();
    expect(entries.filter((e) => e.kind === 'charge' && e.fresh)).toHaveLength(100);
    expect(entries.filter((e) => e.kind === 'receipt' && e.fresh)).toHaveLength(100);
    expect(entries.filter((e) => !e.fresh)).toEqual([]);
  });

  it('an approval POSTed while every worker is down resumes its task on a new worker', async () => {
    const c = await Cluster.start({
      brokers,
      label: 'signal',
      gateways: 1,
      workers: 2,
      signals: true,
      groupSessionTimeoutMs: 2_000,
    });
    onTestFinished(() => c.stop());
    const url = `http://127.0.0.1:${c.gateways[0]!.port}/mcp`;
    const created = await rpc(url, 'tools/call', {
      name: 'transfer',
      arguments: { to: 'bob', amountCents: 700, approver: 'ana@example.com' },
    });
    const taskId = String(created.body.result?.['taskId']);
    const asked = () =>
      c.workers.flatMap((w) => w.process.events.flatMap((e) => (e['ask'] ? [e['ask']] : [])));
    await expect.poll(() => asked().length, { timeout: 30_000 }).toBe(1);
    const { url: signal } = asked()[0] as { url: string };
    // An operator sees it waiting: `tidemark calls list`, one JSON line per resting call.
    const listed = (await callsList(c.prefix)).map((line) => JSON.parse(line) as object);
    expect(listed).toEqual([
      expect.objectContaining({ owner: taskId, kind: 'signal', name: 'approval' }),
    ]);
    const at = `${url}${new URL(signal).pathname.slice('/mcp'.length)}`;
    for (const worker of [...c.workers]) await c.kill(worker, 'SIGKILL');
    const post = (body: unknown) =>
      fetch(at, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    // No worker to take it: in the log, not yet confirmed.
    expect((await post({ approved: true, comment: 'while down' })).status).toBe(202);
    await c.startWorker();
    const done = await pollTask([url], taskId, ['completed'], { timeoutMs: 60_000 });
    expect(done['result']).toMatchObject({
      structuredContent: {
        approved: true,
        comment: 'while down',
        transferId: expect.any(String) as unknown,
      },
    });
    expect(c.stepLines().filter((s) => s.step === 'transfer' && !s.replayed)).toHaveLength(1);
    expect((await post({ approved: false })).status).toBe(409);
    expect(await callsList(c.prefix)).toEqual([]);
  });
});
