import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { Cluster, sleep, type Member } from './cluster.js';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';
import { pollTask, rpc, rpcResponse, sseMessages } from '@tidemark/fixtures/task-client';

// Durable steps on a real broker, with worker processes killed (-9) right after a step was
// journaled: the call runs again on the survivor as a new generation, which replays the step from
// the log instead of running it — the pretend payment API (a file both workers write) is asked
// for the charge once — and finishes with the same charge. On each lane: session, stateless, task.

const brokers = inject('kafkaBrokers');

async function cluster(label: string) {
  // The pretend API's ledger: a file the worker processes (started now) share and outlive.
  const ledger = join(mkdtempSync(join(tmpdir(), 'tidemark-steps-')), 'payments.jsonl');
  process.env['PAYMENTS_LEDGER'] = ledger;
  const started = await Cluster.start({ brokers, label, gateways: 2, workers: 2 });
  onTestFinished(() => started.stop());
  return {
    c: started,
    urls: started.gateways.map((g) => `http://127.0.0.1:${g.port}/mcp`),
    api: new PretendPayments(ledger),
  };
}

/** A call's steps as `[step, replayed]`, in the order they were journaled or replayed. */
function stepsOf(c: Cluster, session?: string): Array<[string, boolean]> {
  return c
    .stepLines()
    .filter((s) => session === undefined || s.session === session)
    .map((s) => [s.step, s.replayed]);
}

const CHARGED_ONCE = [
  ['charge', false],
  ['charge', true],
  ['receipt', false],
];

/** The worker that journaled a step (not replayed) first, once it has. */
async function journaledBy(c: Cluster, step: string, timeoutMs = 30_000): Promise<Member> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const worker of c.workers) {
      const found = worker.process.events.some((e) => {
        const line = e['step'] as { step: string; replayed: boolean } | undefined;
        return line?.step === step && !line.replayed;
      });
      if (found) return worker;
    }
    if (Date.now() > deadline) throw new Error(`no worker journaled ${step} in ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** The ledger after the call: one charge and one receipt request, the charge the call answered. */
function expectChargedOnce(api: PretendPayments, chargeId: unknown): void {
  const entries = api.entries();
  expect(entries.filter((e) => e.kind === 'charge')).toEqual([
    expect.objectContaining({ id: chargeId, fresh: true, amountCents: 4200 }),
  ]);
  expect(entries.filter((e) => e.kind === 'receipt')).toEqual([
    expect.objectContaining({ fresh: true }),
  ]);
}

const PAY = { to: 'ada@example.com', amountCents: 4200, holdMs: 2_000 };

describe('durable steps on Kafka: a kill -9 after a step does not run it again', () => {
  it('session lane: the client is reset, the charge replayed from the journal, the result the same charge', async () => {
    const { c, urls, api } = await cluster('steps-session');
    const client = await connectResumingClient(urls[0]!, { name: 'steps' });
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const resets: string[] = [];
    client.fallbackNotificationHandler = (notification) => {
      if (notification.method === 'notifications/tidemark/reset')
        resets.push(String((notification.params as { reason?: unknown }).reason));
      return Promise.resolve();
    };
    let killed: Promise<void> | undefined;
    const result = await client.callTool(
      { name: 'pay', arguments: PAY },
      {
        timeout: 90_000,
        onprogress: (p) => {
          // Progress 1 goes out once the charge is journaled: the worker dies after the step.
          if (p.progress === 1) killed ??= c.kill(c.runnerOf(session)!, 'SIGKILL');
        },
      },
    );
    expect(killed).toBeDefined();
    await killed;
    expect(result.isError).not.toBe(true);
    expect(resets).toEqual(['generation-superseded']);
    expectChargedOnce(api, (result.structuredContent as { chargeId: string }).chargeId);
    expect(c.executionsOf(session)).toContainEqual(
      expect.objectContaining({ cause: 'takeover', attempt: 2 }),
    );
    expect(stepsOf(c, session).sort()).toEqual([...CHARGED_ONCE].sort());
  });

  it('session lane: a step waiting between two tries goes on counting on the survivor after a kill -9 — its service asked again once, not from the start', async () => {
    const { c, urls, api } = await cluster('steps-retry');
    const client = await connectResumingClient(urls[0]!, { name: 'steps' });
    const session = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const args = { ...PAY, holdMs: 0, receiptRefusals: 1, receiptRetryAfterMs: 4_000 };
    const call = client.callTool({ name: 'pay', arguments: args }, { timeout: 90_000 });
    // The receipt service refused the first try; the step journaled its retry and waits 4 s.
    const deadline = Date.now() + 30_000;
    while (!c.stepLines().some((s) => s.step === 'receipt' && 'retryInMs' in s)) {
      if (Date.now() > deadline) throw new Error('the receipt step was never retried');
      await sleep(20);
    }
    await c.kill(c.runnerOf(session)!, 'SIGKILL');
    const result = await call;
    expect(result.isError).not.toBe(true);
    const entries = api.entries();
    expect(entries.filter((e) => e.kind === 'receipt-refused')).toHaveLength(1);
    expect(entries.filter((e) => e.kind === 'receipt')).toEqual([
      expect.objectContaining({ fresh: true }),
    ]);
    // The killed worker's line and the survivor's (listed survivors first).
    const receipts = c.stepLines().filter((s) => s.step === 'receipt');
    expect(receipts).toHaveLength(2);
    expect(receipts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ok: false, attempts: 1, retryInMs: 4_000 }),
        expect.objectContaining({ ok: true, attempts: 2, replayed: false }),
      ]),
    );
  });

  it('stateless lane (2026-07-28): the request runs again on the survivor, replays the charge, answers once', async () => {
    const { c, urls, api } = await cluster('steps-stateless');
    const answer = rpcResponse(
      urls[1]!,
      'tools/call',
      { name: 'pay', arguments: PAY },
      { tasks: false },
    );
    await c.kill(await journaledBy(c, 'charge'), 'SIGKILL');
    const messages = sseMessages(await (await answer).text());
    const final = messages.at(-1) as { result?: { structuredContent?: { chargeId?: string } } };
    expect(final.result?.structuredContent?.chargeId).toMatch(/^ch_/);
    expectChargedOnce(api, final.result?.structuredContent?.chargeId);
    expect(stepsOf(c).sort()).toEqual([...CHARGED_ONCE].sort());
  });

  it('task: the task completes on the survivor with the charge replayed, read through either gateway', async () => {
    const { c, urls, api } = await cluster('steps-task');
    const created = await rpc(urls[0]!, 'tools/call', { name: 'pay', arguments: PAY });
    expect(created.body.result?.['resultType']).toBe('task');
    const taskId = String(created.body.result?.['taskId']);
    await c.kill(await journaledBy(c, 'charge'), 'SIGKILL');
    const done = await pollTask(urls, taskId, ['completed'], {
      timeoutMs: 90_000,
      intervalMs: 200,
    });
    const chargeId = (done['result'] as { structuredContent?: { chargeId?: string } })
      .structuredContent?.chargeId;
    expectChargedOnce(api, chargeId);
    expect(stepsOf(c, taskId).sort()).toEqual([...CHARGED_ONCE].sort());
  });

  it('session lane, keyed: a request that joined a call follows it across the kill -9 of its worker — reset, then the same charge', async () => {
    const { c, urls, api } = await cluster('steps-joined');
    const [a, b] = [new RawMcpClient(urls[0]!), new RawMcpClient(urls[1]!)];
    await a.initialize();
    await b.initialize();
    const key = randomUUID();
    const call = async (client: RawMcpClient, id: number, onProgress = (_step: number) => {}) => {
      const response = await client.post({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: 'pay',
          arguments: PAY,
          _meta: { progressToken: `p${id}`, 'io.tidemark/idempotency-key': key },
        },
      });
      const messages: Array<Record<string, unknown>> = [];
      await readSse(response, (event) => {
        if (event.data === '') return;
        const message = JSON.parse(event.data) as Record<string, unknown>;
        messages.push(message);
        if (message['method'] === 'notifications/progress')
          onProgress(Number((message['params'] as { progress?: unknown }).progress));
      });
      return messages;
    };
    const original = call(a, 1);
    const runner = await journaledBy(c, 'charge');
    let joinedProgress!: () => void;
    const progressed = new Promise<void>((resolve) => (joinedProgress = resolve));
    const joined = call(b, 2, (step) => step === 1 && joinedProgress());
    // The joiner has the charge's progress before the runner dies, which is still holding.
    await progressed;
    await c.kill(runner, 'SIGKILL');
    const [first, second] = await Promise.all([original, joined]);
    const result = (messages: Array<Record<string, unknown>>) => messages.at(-1)?.['result'];
    expect(first.at(-1)).toMatchObject({ id: 1 });
    expect(second.at(-1)).toMatchObject({ id: 2 });
    expect(result(second)).toEqual(result(first));
    expect(second.map((m) => m['method'])).toContain('notifications/tidemark/reset');
    expectChargedOnce(
      api,
      (result(first) as { structuredContent: { chargeId: string } }).structuredContent.chargeId,
    );
  });
});
