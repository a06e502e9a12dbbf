import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { approvalsModule, type ApprovalRequest } from '@tidemark/examples/approvals';
import counting from '@tidemark/examples/counting';
import { describe, expect, it, type TestContext } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// Signals (`ex.signal`) through a gateway on the embedded log, with the approval example: the URL
// a call asks for takes one answer — 200 and the call goes on with it; a second POST 409; a forged
// or expired URL 404; an answer its schema refuses 400, the signal still open. Waiting, a call
// holds no slot: more tasks wait than the worker has task slots, a plain call is answered
// meanwhile, and an answer wakes its task at once, off memory too.

/** Each test's own stack (the tests run at once: each stops its own); every ask kept. */
async function setup({ onTestFinished }: TestContext, worker = {}) {
  const asks: ApprovalRequest[] = [];
  const transfers: string[] = [];
  const stack = await embeddedStack({
    modules: [
      approvalsModule({
        notify: (ask) => void asks.push(ask),
        transfer: ({ to }) => (transfers.push(to), `tr-${to}`),
      }),
      counting,
    ],
    worker: { maxConcurrentTasks: 2, maxTasksPerSubject: 2, ...worker },
  });
  onTestFinished(() => stack.stop());
  const url = stack.gateways[0]!.url;
  // The worker's URLs name `tidemark dev`'s endpoint; this gateway listens elsewhere.
  const at = (signal: string) => `${url}${new URL(signal).pathname.slice('/mcp'.length)}`;
  const post = (signal: string, body: unknown, type = 'application/json') =>
    fetch(at(signal), {
      method: 'POST',
      headers: { 'Content-Type': type },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  return { asks, transfers, url, post, at };
}

const transfer = (to: string, extra: Record<string, unknown> = {}) => ({
  name: 'transfer',
  arguments: { to, amountCents: 500, approver: 'ana@example.com', ...extra },
});

async function connect(url: string, { onTestFinished }: TestContext): Promise<Client> {
  const client = new Client({ name: 'signals-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  onTestFinished(() => client.close().catch(() => undefined));
  return client;
}

describe.concurrent('signals and approvals (embedded log)', () => {
  it('a session call waits for its approver: a refused body 400, the answer 200, then 409; forged 404', async (context) => {
    const { asks, transfers, url, post, at } = await setup(context);
    const client = await connect(url, context);
    const called = client.callTool(transfer('bob'));
    await expect.poll(() => asks.length, { timeout: 10_000 }).toBe(1);
    const ask = asks[0]!;
    expect(ask.url).toMatch(/^http:\/\/127\.0\.0\.1:3000\/mcp\/signals\/[A-Za-z0-9_-]{40,}$/);
    expect(ask.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);

    const refused = await post(ask.url, { approved: 'yes' });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(await refused.json())).toContain('approved');
    expect((await post(ask.url, 'not json')).status).toBe(400);
    expect((await post(ask.url, { approved: true }, 'text/plain')).status).toBe(415);
    const token = ask.url.slice(ask.url.lastIndexOf('/') + 1);
    const forged = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
    expect((await post(ask.url.replace(token, forged), { approved: true })).status).toBe(404);
    expect((await post(ask.url.replace(token, 'nothing'), { approved: true })).status).toBe(404);
    expect((await fetch(at(ask.url))).status).toBe(405);
    expect(transfers).toEqual([]);

    const answered = await post(ask.url, { approved: true, comment: 'fine' });
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ answered: true });
    const result = await called;
    expect(result.structuredContent).toMatchObject({
      approver: 'ana@example.com',
      approved: true,
      comment: 'fine',
      transferId: 'tr-bob',
    });
    expect(transfers).toEqual(['bob']);
    const again = await post(ask.url, { approved: false });
    expect(again.status).toBe(409);
    expect(transfers).toEqual(['bob']);
    expect(asks).toHaveLength(1);
  });

  it('an approval not given in time refuses the transfer; its URL then answers 404', async (context) => {
    const { asks, transfers, url, post } = await setup(context);
    const started = Date.now();
    const answer = await rpc(url, 'tools/call', transfer('eve', { timeoutMs: 1_500 }), {
      tasks: false,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    expect(answer.body.result?.['structuredContent']).toMatchObject({
      approved: false,
      expired: true,
    });
    expect((await post(asks[0]!.url, { approved: true })).status).toBe(404);
    expect(transfers).toEqual([]);
  });

  it('tasks waiting for approval hold no task slot; each answer wakes its task at once, off memory too', async (context) => {
    // Waits of 5 s or more leave memory (the default is a minute): the path a long wait takes.
    const { asks, transfers, url, post } = await setup(context, { sleepInMemoryMs: 5_000 });
    const TASKS = 6; // on 2 task slots
    const created = await Promise.all(
      Array.from({ length: TASKS }, (_, i) => rpc(url, 'tools/call', transfer(`t${i}`))),
    );
    const ids = created.map(({ body }) => String(body.result?.['taskId']));
    await expect.poll(() => asks.length, { timeout: 10_000 }).toBe(TASKS);
    const plain = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2 } },
      { tasks: false },
    );
    expect(JSON.stringify(plain.body.result)).toContain('1,2');
    const byTo = new Map(asks.map((ask) => [ask.summary.split(' ').at(-1)!, ask.url]));
    for (let i = 0; i < TASKS; i++) {
      const answeredAt = Date.now();
      const response = await post(byTo.get(`t${i}`)!, { approved: i % 2 === 0 });
      expect(response.status).toBe(200);
      const task = await pollTask([url], ids[i]!, ['completed'], {
        intervalMs: 50,
        timeoutMs: 10_000,
      });
      expect(task['status']).toBe('completed');
      // Woken by its answer, not at its expiry (a day) nor by a poll.
      expect(Date.now() - answeredAt).toBeLessThan(3_000);
    }
    expect(transfers.sort()).toEqual(['t0', 't2', 't4']);
  });
});
