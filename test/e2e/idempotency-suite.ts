// Idempotency keys of the stateless lane (2026-07-28) through two gateways: the same key runs the
// tool once and answers every request with the original outcome; other arguments are refused; a
// request re-issued after its stream broke joins the running execution; a keyed task is one task.
// The same tests on the embedded log and on Kafka.
import { randomUUID } from 'node:crypto';
import type { PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, it } from 'vitest';
import { RawMcpClient, readSse } from '../support/sse.js';
import { rpc, rpcResponse, type TaskClientOptions } from '../support/task-client.js';

export interface KeyedStack {
  /** Two gateways on one log. */
  readonly urls: readonly [string, string];
  /** The pretend payment API the workers' `pay` charges. */
  readonly api: PretendPayments;
}

const PAY = { to: 'ada@example.com', amountCents: 4200 };

/** A plain (not task) `tools/call pay` with an idempotency key in the header. */
function pay(
  url: string,
  key: string,
  args: Record<string, unknown> = PAY,
  options: TaskClientOptions = {},
) {
  return rpc(
    url,
    'tools/call',
    { name: 'pay', arguments: args },
    {
      tasks: false,
      headers: { 'Idempotency-Key': `"${key}"` },
      ...options,
    },
  );
}

const charges = (api: PretendPayments) => api.entries().filter((e) => e.kind === 'charge');

/** A session-lane `tools/call pay` with the key in `_meta`; every message of its stream. */
async function sessionPay(
  client: RawMcpClient,
  id: number,
  key: string,
  args: Record<string, unknown> = PAY,
): Promise<Array<Record<string, unknown>>> {
  const response = await client.post({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'pay',
      arguments: args,
      _meta: { progressToken: `p${id}`, 'io.tidemark/idempotency-key': key },
    },
  });
  const messages: Array<Record<string, unknown>> = [];
  await readSse(response, (event) => {
    if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
  });
  return messages;
}

const progressOf = (messages: ReadonlyArray<Record<string, unknown>>) =>
  messages
    .filter((m) => m['method'] === 'notifications/progress')
    .map((m) => m['params'] as { progressToken: string; progress: number });

export function describeIdempotency(name: string, start: () => Promise<KeyedStack>): void {
  describe(`idempotency keys (${name})`, () => {
    it('the same key twice through two gateways runs the tool once and answers the same result, each with its own id', async () => {
      const { urls, api } = await start();
      const key = randomUUID();
      const first = await pay(urls[0], key, PAY, { id: 'first' });
      const second = await pay(urls[1], key, PAY, { id: 'second' });
      expect(first.body).toMatchObject({
        result: { structuredContent: { chargeId: charges(api)[0]!.id } },
      });
      expect(second.body.result).toEqual(first.body.result);
      expect(second.body).toMatchObject({ id: 'second' });
      expect(first.body).toMatchObject({ id: 'first' });
      expect(charges(api)).toHaveLength(1);
      // In `_meta` instead of the header: the same key, the same call.
      const third = await rpc(
        urls[0],
        'tools/call',
        { name: 'pay', arguments: PAY },
        {
          tasks: false,
          meta: { 'io.tidemark/idempotency-key': key },
        },
      );
      expect(third.body.result).toEqual(first.body.result);
      expect(charges(api)).toHaveLength(1);
      // Another key is another call.
      await pay(urls[1], randomUUID());
      expect(charges(api)).toHaveLength(2);
    });

    it('the same key with other arguments is refused with a clear error, and changes nothing', async () => {
      const { urls, api } = await start();
      const key = randomUUID();
      await pay(urls[0], key);
      const other = await pay(urls[1], key, { ...PAY, amountCents: 9999 });
      expect(other.body.error).toMatchObject({
        code: -32602,
        data: { reason: 'idempotency-key-reused' },
      });
      expect(other.body.error?.message).toContain('this idempotency key was used for another call');
      expect(charges(api)).toHaveLength(1);
      // Argument order does not make another call (canonical JSON).
      const reordered = await pay(urls[1], key, { amountCents: 4200, to: 'ada@example.com' });
      expect(reordered.body.result).toBeDefined();
    });

    it('a request re-issued after its stream broke joins the running execution instead of starting one', async () => {
      const { urls, api } = await start();
      const key = randomUUID();
      const broken = new AbortController();
      const slow = { ...PAY, holdMs: 1_500 };
      const first = rpcResponse(
        urls[0],
        'tools/call',
        { name: 'pay', arguments: slow },
        {
          tasks: false,
          headers: { 'Idempotency-Key': key },
          id: 1,
          signal: broken.signal,
        },
      );
      await expect.poll(() => charges(api).length, { timeout: 30_000, interval: 20 }).toBe(1);
      broken.abort();
      await first.then((response) => response.text()).catch(() => undefined);
      // The client re-issues it (here with the same JSON-RPC id, as an HTTP retry would).
      const again = await pay(urls[1], key, slow, { id: 1 });
      expect(again.body).toMatchObject({
        result: { structuredContent: { chargeId: charges(api)[0]!.id } },
      });
      expect(charges(api)).toHaveLength(1);
      expect(api.entries().filter((e) => e.kind === 'receipt')).toHaveLength(1);
    });

    it('a keyed task is one task: the same key answers the same task id through either gateway', async () => {
      const { urls } = await start();
      const key = randomUUID();
      const create = (url: string) =>
        rpc(
          url,
          'tools/call',
          { name: 'pay', arguments: PAY },
          {
            headers: { 'Idempotency-Key': key },
          },
        );
      const first = await create(urls[0]);
      expect(first.body.result?.['resultType']).toBe('task');
      const second = await create(urls[1]);
      expect(second.body.result?.['taskId']).toBe(first.body.result?.['taskId']);
    });

    it('session lane: the same key in two sessions through two gateways runs once; the joiner streams the original from the start, under its own token and id', async () => {
      const { urls, api } = await start();
      const [a, b] = [new RawMcpClient(urls[0]), new RawMcpClient(urls[1])];
      await a.initialize();
      await b.initialize();
      const key = randomUUID();
      const slow = { ...PAY, holdMs: 1_000 };
      const original = sessionPay(a, 5, key, slow);
      await expect.poll(() => charges(api).length, { timeout: 30_000, interval: 20 }).toBe(1);
      const joined = await sessionPay(b, 9, key, slow);
      const first = await original;
      expect(first.at(-1)).toMatchObject({ id: 5, result: { structuredContent: {} } });
      expect(joined.at(-1)).toMatchObject({ id: 9, result: first.at(-1)!['result'] as object });
      // Its stream from the start: both progress notifications, under the joiner's token.
      expect(progressOf(joined)).toEqual([
        expect.objectContaining({ progressToken: 'p9', progress: 1 }),
        expect.objectContaining({ progressToken: 'p9', progress: 2 }),
      ]);
      expect(charges(api)).toHaveLength(1);
      // Finished: a third session gets its outcome; other arguments are refused; and the key is
      // the same on the stateless lane.
      const c = new RawMcpClient(urls[0]);
      await c.initialize();
      expect((await sessionPay(c, 1, key, slow)).at(-1)).toMatchObject({
        id: 1,
        result: first.at(-1)!['result'] as object,
      });
      expect((await sessionPay(c, 2, key, PAY)).at(-1)).toMatchObject({
        id: 2,
        error: { code: -32602, data: { reason: 'idempotency-key-reused' } },
      });
      const stateless = await pay(urls[1], key, slow);
      expect(stateless.body.result).toEqual(first.at(-1)!['result']);
      expect(charges(api)).toHaveLength(1);
      expect(api.entries().filter((e) => e.kind === 'receipt')).toHaveLength(1);
    });

    it('a key whose session call went with its session (DELETE) is answered at once with why, on either lane — never left waiting (security review M6)', async () => {
      const { urls } = await start();
      const a = new RawMcpClient(urls[0]);
      await a.initialize();
      const key = randomUUID();
      expect((await sessionPay(a, 1, key)).at(-1)).toMatchObject({ id: 1, result: {} });
      const deleted = await fetch(urls[0], {
        method: 'DELETE',
        headers: { 'Mcp-Session-Id': a.session, 'MCP-Protocol-Version': '2025-11-25' },
      });
      expect(deleted.status).toBe(200);
      // Until the worker forgets the session's heads it still answers the outcome; after, the
      // claim names a call nothing will ever finish. Each request must be answered in seconds.
      const gone = { code: -32602, data: { reason: 'idempotency-key-gone' } };
      await expect
        .poll(
          async () =>
            (await pay(urls[1], key, PAY, { signal: AbortSignal.timeout(5_000) })).body.error,
          { timeout: 20_000, interval: 100 },
        )
        .toMatchObject(gone);
      // A session-lane request with the key, which would mirror the call's stream, is told too.
      const c = new RawMcpClient(urls[1]);
      await c.initialize();
      const joined = await Promise.race([
        sessionPay(c, 2, key),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the session-lane join was never answered')), 10_000),
        ),
      ]);
      expect(joined.at(-1)).toMatchObject({ id: 2, error: gone });
    });

    it('a key that is not one is refused with 400 before anything is logged', async () => {
      const { urls, api } = await start();
      const refused = async (options: TaskClientOptions) => {
        const answer = await rpc(
          urls[0],
          'tools/call',
          { name: 'pay', arguments: PAY },
          {
            tasks: false,
            ...options,
          },
        );
        return [answer.status, answer.body.error?.code];
      };
      expect(await refused({ headers: { 'Idempotency-Key': '""' } })).toEqual([400, -32602]);
      expect(await refused({ headers: { 'Idempotency-Key': 'x'.repeat(256) } })).toEqual([
        400, -32602,
      ]);
      expect(await refused({ meta: { 'io.tidemark/idempotency-key': 42 } })).toEqual([400, -32602]);
      expect(
        await refused({
          headers: { 'Idempotency-Key': 'a' },
          meta: { 'io.tidemark/idempotency-key': 'b' },
        }),
      ).toEqual([400, -32602]);
      expect(charges(api)).toHaveLength(0);
    });
  });
}
