import { experimental_createMCPEventWebhook as createMCPEventWebhook } from '@ai-sdk/mcp';
import { describe, expect, it } from 'vitest';
import { postWebhook, resolveCallback, verifyCallback } from '../src/index.js';
import { loopbackReceiver } from './loopback-receiver.js';

// A receiver nobody here wrote: the Vercel AI SDK's MCP Events webhook handler (@ai-sdk/mcp
// 2.0.99, `experimental_createMCPEventWebhook`), the executable form of the webhook profile ChatGPT publishes.
// Our deliveries must pass its signature check, its verification challenge and its envelope.

const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const KEY = 'routing-key-1';
const ID = 'sub_test';

type Stored = Record<string, unknown> & { key: string };

async function aiSdkReceiver() {
  const stored = new Map<string, Stored>();
  const events: unknown[] = [];
  const gaps: unknown[] = [];
  const store = {
    get: (key: string) => Promise.resolve(stored.get(key) as never),
    getById: (id: string) =>
      Promise.resolve([...stored.values()].find((s) => s['id'] === id) as never),
    set: (subscription: Stored) => Promise.resolve(void stored.set(subscription.key, subscription)),
    update: (key: string, patch: object) =>
      Promise.resolve(void stored.set(key, { ...stored.get(key)!, ...patch })),
    delete: (key: string) => Promise.resolve(void stored.delete(key)),
  };
  const handle = createMCPEventWebhook({
    store,
    onEvent: ({ event }) => Promise.resolve(void events.push(event)),
    onGap: ({ gap }) => Promise.resolve(void gaps.push(gap)),
  });
  // Node's http to the handler's Web Request and back.
  const { port } = await loopbackReceiver((got, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(got.headers))
      if (typeof value === 'string') headers.set(name, value);
    const request = new Request(`http://${got.headers.host}${got.url}`, {
      method: got.method,
      headers,
      body: got.body,
    });
    void handle(request).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
  });
  const url = `http://127.0.0.1:${port}/mcp/events?mcp_event_subscription=${KEY}`;
  stored.set(KEY, {
    key: KEY,
    id: ID,
    name: 'ticks',
    arguments: { everyMs: 1000 },
    definition: {
      name: 'ticks',
      delivery: ['webhook'],
      inputSchema: { type: 'object' },
      payloadSchema: { type: 'object' },
    },
    delivery: { mode: 'webhook', url, secret: SECRET },
    cursor: null,
    truncated: false,
    status: 'active',
    refreshBefore: null,
  });
  const target = await resolveCallback(new URL(url), { allowLoopback: true });
  return { target, stored, events, gaps };
}

const post = (
  target: Awaited<ReturnType<typeof aiSdkReceiver>>['target'],
  messageId: string,
  body: unknown,
  secret = SECRET,
) => postWebhook({ target, secret, messageId, subscriptionId: ID, body: JSON.stringify(body) });

describe('deliveries to the AI SDK’s MCP Events receiver', () => {
  it('answers our verification challenge', async () => {
    const { target } = await aiSdkReceiver();
    expect(await verifyCallback(target, { secret: SECRET, subscriptionId: ID })).toEqual({
      ok: true,
    });
    const wrongSecret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(await verifyCallback(target, { secret: wrongSecret, subscriptionId: ID })).toMatchObject(
      {
        ok: false,
        retryable: false,
      },
    );
  });

  it('accepts a signed occurrence whose webhook-id is its eventId, and refuses a forged one', async () => {
    const { target, events, stored } = await aiSdkReceiver();
    const event = {
      eventId: 'evt_1',
      name: 'ticks',
      timestamp: '2026-12-02T00:00:00.000Z',
      data: { n: 1 },
      cursor: 'c-1',
    };
    expect(await post(target, 'evt_1', event)).toMatchObject({ ok: true, status: 204 });
    expect(events).toEqual([event]);
    expect(stored.get(KEY)!['cursor']).toBe('c-1');
    expect(await post(target, 'another-id', event)).toMatchObject({ ok: false, status: 400 });
    const forged = await post(
      target,
      'evt_1',
      event,
      `whsec_${Buffer.alloc(32, 2).toString('base64')}`,
    );
    expect(forged).toMatchObject({ ok: false, status: 401, retryable: false });
    expect(events).toHaveLength(1);
  });

  it('takes a gap as a fresh cursor, and a termination as the end of the subscription', async () => {
    const { target, gaps, stored } = await aiSdkReceiver();
    expect(await post(target, 'gap-1', { type: 'gap', cursor: 'c-9' })).toMatchObject({ ok: true });
    expect(gaps).toEqual([{ type: 'gap', cursor: 'c-9', truncated: true }]);
    expect(stored.get(KEY)).toMatchObject({ cursor: 'c-9', truncated: true });
    const terminated = { type: 'terminated', error: { code: -32001, message: 'expired' } };
    expect(await post(target, 'end-1', terminated)).toMatchObject({ ok: true });
    expect(stored.has(KEY)).toBe(false);
  });
});
