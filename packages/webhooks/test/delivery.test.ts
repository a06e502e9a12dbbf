import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { postWebhook, resolveCallback } from '../src/index.js';
import { loopbackReceiver } from './loopback-receiver.js';

// One signed POST to a real receiver on loopback (development's policy), verified by the
// Standard Webhooks library itself rather than by this package's own code.

const SECRET = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;

async function target(href: string) {
  // A name no resolver knows: the request reaches the receiver only through the pinned address.
  return resolveCallback(new URL(href), { allowLoopback: true }, () =>
    Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
  );
}

const event = {
  eventId: 'ev-1',
  name: 'ticks',
  timestamp: '2026-12-02T00:00:00.000Z',
  data: { n: 1 },
  cursor: 'c1',
};

describe('postWebhook', () => {
  it('delivers one signed event the Standard Webhooks library verifies, with the subscription id', async () => {
    const { received, port } = await loopbackReceiver((_got, res) => res.writeHead(204).end());
    const outcome = await postWebhook({
      target: await target(`http://hooks.test:${port}/mcp?mcp_event_subscription=k1`),
      secret: SECRET,
      messageId: event.eventId,
      subscriptionId: 'sub_abc',
      body: JSON.stringify(event),
    });
    expect(outcome).toEqual({ ok: true, status: 204, response: '' });
    const [got] = received;
    expect(got!.headers['webhook-id']).toBe('ev-1');
    expect(got!.headers['x-mcp-subscription-id']).toBe('sub_abc');
    expect(got!.headers.host).toBe(`hooks.test:${port}`);
    const verified = new Webhook(SECRET).verify(
      got!.body.toString('utf8'),
      got!.headers as Record<string, string>,
    );
    expect(verified).toEqual(event);
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 6).toString('base64')}`).verify(
        got!.body,
        got!.headers as Record<string, string>,
      ),
    ).toThrow();
  });

  it('reads a verification answer, and only so much of any answer', async () => {
    const { port } = await loopbackReceiver((got, res) => {
      const { challenge } = JSON.parse(got.body.toString('utf8')) as { challenge: string };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ challenge, padding: 'x'.repeat(10_000) }));
    });
    const outcome = await postWebhook({
      target: await target(`http://hooks.test:${port}/`),
      secret: SECRET,
      messageId: 'verify-1',
      subscriptionId: 'sub_abc',
      body: JSON.stringify({ type: 'verification', challenge: 'ch-7' }),
    });
    expect(outcome.ok).toBe(true);
    expect(outcome.ok && outcome.response.startsWith('{"challenge":"ch-7"')).toBe(true);
    expect(outcome.ok && outcome.response.length).toBeLessThanOrEqual(4096);
  });

  it('says which failures are worth another try, and that 410 ends the subscription', async () => {
    const statuses = [503, 429, 400, 410, 302];
    const { port } = await loopbackReceiver((_got, res) =>
      res.writeHead(statuses.shift()!, { location: 'http://127.0.0.1:9/elsewhere' }).end(),
    );
    const post = {
      target: await target(`http://hooks.test:${port}/`),
      secret: SECRET,
      messageId: 'ev-2',
      subscriptionId: 'sub_abc',
      body: '{}',
    };
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(await postWebhook(post));
    expect(outcomes.map((o) => !o.ok && [o.status, o.retryable, o.gone])).toEqual([
      [503, true, false],
      [429, true, false],
      [400, false, false],
      [410, false, true],
      [302, false, false],
    ]);
  });

  it('gives up on a receiver that does not answer in time, and on a body over 256 KiB unsent', async () => {
    const { port, received } = await loopbackReceiver(() => undefined);
    const outcome = await postWebhook({
      target: await target(`http://hooks.test:${port}/`),
      secret: SECRET,
      messageId: 'ev-3',
      subscriptionId: 'sub_abc',
      body: '{}',
      timeoutMs: 200,
    });
    expect(outcome).toMatchObject({ ok: false, retryable: true, status: undefined });
    const big = await postWebhook({
      target: await target(`http://hooks.test:${port}/`),
      secret: SECRET,
      messageId: 'ev-4',
      subscriptionId: 'sub_abc',
      body: JSON.stringify({ data: 'x'.repeat(300 * 1024) }),
    });
    expect(big).toMatchObject({ ok: false, retryable: false });
    expect(!big.ok && big.error).toMatch(/over 262144/);
    expect(received).toHaveLength(1);
  });

  it('refuses a secret that is not a Standard Webhooks secret', async () => {
    const outcome = await postWebhook({
      target: await target('http://hooks.test:9/'),
      secret: 'whsec_!!!',
      messageId: 'ev-5',
      subscriptionId: 'sub_abc',
      body: '{}',
    });
    expect(outcome).toMatchObject({ ok: false, retryable: false });
  });
});
