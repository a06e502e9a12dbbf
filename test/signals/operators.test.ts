import { randomUUID } from 'node:crypto';
import { approvalsModule, type ApprovalRequest } from '@tidemark/examples/approvals';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import {
  RequestWriter,
  restingCalls,
  StepJournal,
  StreamHeadStore,
  type WaitingStep,
} from '@tidemark/log';
import {
  asRoutingKey,
  TASK_CANCEL_METHOD,
  WAKE_METHOD,
  type PartitionKey,
  type RequestRecord,
} from '@tidemark/protocol';
import { expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// What an operator sees and repairs (`tidemark calls list|wake|cancel`, on the embedded log here):
// the calls resting in the log — a task asleep off memory, a session call waiting for its
// approver — listed from the journals with their wake and expiry times; a wake, sealed with the
// gateways' secret as the CLI writes it, ends a sleep at once; a cancel cancels a sleeping task.

it('lists the sleeping and the waiting calls; a wake ends a sleep now, a cancel a task', async () => {
  const asks: ApprovalRequest[] = [];
  const api = new PretendPayments(undefined);
  const stack = await embeddedStack({
    modules: [paymentsModule(api), approvalsModule({ notify: (ask) => void asks.push(ask) })],
    worker: { sleepInMemoryMs: 5_000 },
  });
  onTestFinished(() => stack.stop());
  const url = stack.gateways[0]!.url;
  const pay = (to: string) => ({
    name: 'pay',
    arguments: { to, amountCents: 100, receiptAfterMs: 3_600_000 },
  });
  const [woken, cancelled] = await Promise.all([
    rpc(url, 'tools/call', pay('woken@example.com')),
    rpc(url, 'tools/call', pay('cancelled@example.com')),
  ]);
  const wokenId = String(woken.body.result?.['taskId']);
  const cancelledId = String(cancelled.body.result?.['taskId']);
  const approval = rpc(
    url,
    'tools/call',
    {
      name: 'transfer',
      arguments: { to: 'bob', amountCents: 5, approver: 'ana', timeoutMs: 600_000 },
    },
    { tasks: false },
  );

  const stores = { port: stack.log, topics: stack.topics, partitionCount: 2 };
  const [journal, heads] = [new StepJournal(stores), new StreamHeadStore(stores)];
  const list = () => restingCalls(journal, heads, 2, Date.now());
  let resting: WaitingStep[] = [];
  await expect.poll(async () => (resting = await list()).length, { timeout: 10_000 }).toBe(3);
  const sleeps = resting.filter((w) => w.kind === 'sleep');
  expect(sleeps.map((w) => w.owner).sort()).toEqual([wokenId, cancelledId].sort());
  for (const sleep of sleeps) {
    expect(sleep.name).toBe('before receipt');
    expect(sleep.untilMs! - Date.now()).toBeGreaterThan(3_500_000);
  }
  const waiting = resting.find((w) => w.kind === 'signal')!;
  expect(waiting.name).toBe('approval');
  expect(waiting.untilMs! - Date.now()).toBeGreaterThan(500_000);

  const writer = new RequestWriter({
    log: stack.log,
    topic: stack.topics.requests,
    partitionCount: 2,
    keyring: stack.keyring,
  });
  const write = (key: PartitionKey, message: Record<string, unknown>) => {
    const record: RequestRecord = {
      lane: 'stateless',
      key: asRoutingKey(key),
      message: { jsonrpc: '2.0', ...message },
      classification: null,
      subject: undefined,
    };
    return writer.write(key, [record]);
  };
  const wokeAt = Date.now();
  const asleep = sleeps.find((w) => w.owner === wokenId)!;
  await write(wokenId as PartitionKey, {
    id: `tm-wake-${randomUUID()}`,
    method: WAKE_METHOD,
    params: { journal: asleep.journal },
  });
  await write(cancelledId as PartitionKey, { method: TASK_CANCEL_METHOD });
  const done = await pollTask([url], wokenId, ['completed'], { intervalMs: 50, timeoutMs: 10_000 });
  expect(done['status']).toBe('completed');
  expect(Date.now() - wokeAt).toBeLessThan(5_000);
  const gone = await pollTask([url], cancelledId, ['cancelled'], {
    intervalMs: 50,
    timeoutMs: 10_000,
  });
  expect(gone['status']).toBe('cancelled');
  const receipts = api.entries().filter((e) => e.kind === 'receipt');
  expect(receipts.map((e) => e.to)).toEqual(['woken@example.com']);
  // Left resting: the approval only.
  expect((await list()).map((w) => w.kind)).toEqual(['signal']);
  expect(asks).toHaveLength(1);
  const answered = await fetch(`${url}/signals/${asks[0]!.url.split('/').at(-1)!}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ approved: false }),
  });
  expect(answered.status).toBe(200);
  expect((await approval).body.result?.['structuredContent']).toMatchObject({ approved: false });
  expect(await list()).toEqual([]);
});
