import { createMCPClient } from '@ai-sdk/mcp';
import events from '@tidemark/examples/events';
import type { WorkerOptions } from '@tidemark/worker';
import { eventStreamKey, partitionForSession, type SessionId } from '@tidemark/protocol';
import { EventRegistry } from '@tidemark/log';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { aiSdkWebhook } from '../support/ai-sdk-webhook.js';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';

// Webhook subscriptions (events/subscribe) end to end with a client and a receiver nobody here
// wrote: the Vercel AI SDK's MCP client subscribes, and its webhook handler verifies every
// delivery. The stack runs on the embedded log with two gateway replicas.

const TOKEN = 'alice-token-0123456789';

async function setup(worker: Partial<WorkerOptions> = {}) {
  const stack = await embeddedStack({
    replicas: 2,
    modules: [events],
    bearerTokens: { [TOKEN]: 'alice', 'bob-token-0123456789': 'bob' },
    worker: {
      eventScanMs: 50,
      allowLoopbackWebhooks: true,
      webhookBackoffMs: 20,
      webhookAttempts: 3,
      ...worker,
    },
  });
  onTestFinished(() => stack.stop());
  return { stack, urls: stack.gateways.map((g) => g.url) };
}

async function aiSdkClient(url: string, store: Awaited<ReturnType<typeof aiSdkWebhook>>['store']) {
  const client = await createMCPClient({
    transport: { type: 'http', url, headers: { Authorization: `Bearer ${TOKEN}` } },
    experimental_events: { store },
  });
  onTestFinished(() => client.close());
  return client;
}

/** The AI SDK client subscribes the receiver to `ticks` every `everyMs` (loopback http allowed). */
function subscribeTicks(
  client: Awaited<ReturnType<typeof aiSdkClient>>,
  receiver: Awaited<ReturnType<typeof aiSdkWebhook>>,
  everyMs: number,
  extra: { ttlMs?: number; cursor?: string; maxAgeMs?: number } = {},
) {
  return client.experimental_events.subscribe({
    name: 'ticks',
    arguments: { everyMs },
    delivery: { mode: 'webhook', url: receiver.url, allowInsecureLocalhost: true },
    ...extra,
  });
}

const numbers = (received: Array<{ data: Record<string, unknown> }>) =>
  received.map((event) => event.data['n']);

describe('Events extension: webhook subscriptions', () => {
  it('the AI SDK client subscribes; its handler gets every tick once, in order, signed', async () => {
    const { urls } = await setup();
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    const listed = await client.experimental_events.list();
    expect(listed.events.map((event) => event.name)).toEqual(['ticks', 'incidents', 'deployments']);
    const subscribed = await subscribeTicks(client, receiver, 20);
    expect(subscribed.id).toMatch(/^sub_/);
    expect(Date.parse(String(subscribed.refreshBefore))).toBeGreaterThan(Date.now());
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(10), {
      timeout: 15_000,
    });
    expect(numbers(receiver.events)).toEqual(receiver.events.map((_, i) => i + 1));
    expect(receiver.statuses.filter((status) => status >= 400 && status !== 503)).toEqual([]);
    expect(receiver.unverified).toBe(0);
    // A refresh (the same call again) finds the same subscription, on the other replica too.
    const again = await rpc(
      urls[1]!,
      'events/subscribe',
      {
        name: 'ticks',
        arguments: { everyMs: 20 },
        delivery: { mode: 'webhook', url: subscribedUrl(receiver), secret: secretOf(receiver) },
      },
      { token: TOKEN },
    );
    expect(again.body.result).toMatchObject({ id: subscribed.id });
    expect(
      (again.body.result!['deliveryStatus'] as { delivered: number }).delivered,
    ).toBeGreaterThan(0);
    await client.experimental_events.unsubscribe({ id: subscribed.id });
    const stoppedAt = receiver.events.length;
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(receiver.events.length).toBeLessThanOrEqual(stoppedAt + 1);
  });

  it('refuses an http callback, a private or loopback one, and a bad secret', async () => {
    const { urls } = await setup({ allowLoopbackWebhooks: false });
    const subscribe = (url: string, secret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`) =>
      rpc(
        urls[0]!,
        'events/subscribe',
        {
          name: 'ticks',
          arguments: { everyMs: 20 },
          delivery: { mode: 'webhook', url, secret },
        },
        { token: TOKEN },
      );
    expect((await subscribe('http://example.com/hook')).body.error).toMatchObject({
      code: -32602,
      message: /must use https/,
    });
    expect((await subscribe('https://10.0.0.7/hook')).body.error).toMatchObject({
      code: -32602,
      message: /private/,
    });
    expect((await subscribe('https://127.0.0.1/hook')).body.error).toMatchObject({
      code: -32602,
      message: /loopback/,
    });
    expect((await subscribe('https://example.com/hook', 'not-a-secret')).body.error).toMatchObject({
      code: -32602,
      message: /whsec_/,
    });
  });

  it('retries a receiver that is down for a while: nothing lost, nothing out of order', async () => {
    const { urls } = await setup({ webhookAttempts: 50 });
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    await subscribeTicks(client, receiver, 20);
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(3), {
      timeout: 10_000,
    });
    receiver.refuse = () => 503;
    await new Promise((resolve) => setTimeout(resolve, 500));
    receiver.refuse = undefined;
    const seen = receiver.events.length;
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(seen + 10), {
      timeout: 10_000,
    });
    expect(receiver.statuses).toContain(503);
    expect(numbers(receiver.events)).toEqual(receiver.events.map((_, i) => i + 1));
    expect(receiver.gaps).toEqual([]);
  });

  it('gives an occurrence up after its tries with a gap that says so, then goes on', async () => {
    const { stack, urls } = await setup({ webhookAttempts: 3 });
    const receiver = await aiSdkWebhook();
    receiver.refuse = (body) =>
      (body['data'] as { n?: number } | undefined)?.n === 3 ? 500 : undefined;
    const client = await aiSdkClient(urls[0]!, receiver.store);
    await subscribeTicks(client, receiver, 20);
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(6), {
      timeout: 10_000,
    });
    expect(numbers(receiver.events).slice(0, 4)).toEqual([1, 2, 4, 5]);
    expect(receiver.gaps).toHaveLength(1);
    expect(receiver.statuses.filter((status) => status === 500)).toHaveLength(3);
    // What the console shows: the tries, the refused ones with the receiver's answer.
    const registry = new EventRegistry({
      port: stack.log,
      topic: stack.topics.subscriptions,
      partitionCount: 2,
    });
    const stream = eventStreamKey('ticks', { everyMs: 20 });
    const [subscription] = await registry.subscriptions(
      partitionForSession(stream as SessionId, 2),
    );
    await vi.waitFor(async () => {
      const recent = (await registry.deliveryState(subscription!))?.status.recent ?? [];
      expect(recent.map((entry) => entry.outcome)).toContain('204');
    });
  });

  it('ends a subscription that was not refreshed: the receiver is told, deliveries stop', async () => {
    const { stack, urls } = await setup();
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    await subscribeTicks(client, receiver, 60_000, { ttlMs: 1_000 });
    await vi.waitFor(() => expect(receiver.terminations).toHaveLength(1), { timeout: 10_000 });
    expect(receiver.terminations[0]).toMatchObject({ error: { message: /expired/ } });
    expect(receiver.stored.size).toBe(0); // the AI SDK forgot it, as told
    await vi.waitFor(() => expect(stack.worker.eventWork.deliveries).toBe(0), { timeout: 5_000 });
  });

  it('ends a subscription whose receiver takes nothing, after the tries and a gap', async () => {
    const problems: string[] = [];
    const { urls } = await setup({
      webhookAttempts: 2,
      onProblem: (problem) => problems.push(problem),
    });
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    await subscribeTicks(client, receiver, 20);
    receiver.refuse = () => 500;
    await vi.waitFor(() => expect(problems.join('\n')).toMatch(/the receiver takes nothing/), {
      timeout: 10_000,
    });
    // Tried: the occurrence twice, its gap twice, and the end once.
    expect(receiver.statuses.filter((status) => status === 500).length).toBeGreaterThanOrEqual(5);
  });

  it('says gap when retention took occurrences the receiver had not got, then goes on', async () => {
    const { stack, urls } = await setup({ webhookAttempts: 1_000 });
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    await subscribeTicks(client, receiver, 20);
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(3), {
      timeout: 10_000,
    });
    receiver.refuse = () => 503; // the receiver is away…
    await new Promise((resolve) => setTimeout(resolve, 300));
    // …longer than retention keeps the occurrences it missed.
    const { occurrences } = stack.topics;
    const partition = partitionForSession(eventStreamKey('ticks', { everyMs: 20 }) as SessionId, 2);
    const { highWatermark } = await stack.log.offsets(occurrences, partition);
    await stack.log.deleteRecordsBefore(occurrences, partition, highWatermark);
    const before = receiver.events.length;
    receiver.refuse = undefined;
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThan(before + 3), {
      timeout: 10_000,
    });
    expect(receiver.gaps).toHaveLength(1);
    const after = numbers(receiver.events.slice(before)) as number[];
    expect(after[0]).toBeGreaterThan(Number(receiver.events[before - 1]!.data['n']) + 1);
    expect(after).toEqual(after.map((_, i) => after[0]! + i));
  });

  it('skips occurrences older than maxAgeMs with a gap that says so, from a cursor the client gave', async () => {
    const { urls } = await setup();
    const receiver = await aiSdkWebhook();
    const client = await aiSdkClient(urls[0]!, receiver.store);
    const start = await rpc(
      urls[0]!,
      'events/poll',
      { name: 'ticks', arguments: { everyMs: 20 } },
      { token: TOKEN },
    );
    await new Promise((resolve) => setTimeout(resolve, 800)); // ticks pile up, unpolled
    await subscribeTicks(client, receiver, 20, {
      cursor: String(start.body.result!['cursor']),
      maxAgeMs: 300,
    });
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(5), {
      timeout: 10_000,
    });
    expect(receiver.gaps.length).toBeGreaterThanOrEqual(1);
    const received = numbers(receiver.events) as number[];
    expect(received[0]).toBeGreaterThan(5); // the first ticks were too old
    // In order; any tick skipped (too old by the time it was delivered) had a gap said for it.
    expect(received).toEqual([...received].sort((a, b) => a - b));
  });
});

/** The callback URL the client subscribed with (its routing key in the query). */
function subscribedUrl(receiver: Awaited<ReturnType<typeof aiSdkWebhook>>): string {
  return (storedOf(receiver).delivery as { url: string }).url;
}

function secretOf(receiver: Awaited<ReturnType<typeof aiSdkWebhook>>): string {
  return (storedOf(receiver).delivery as { secret: string }).secret;
}

function storedOf(receiver: Awaited<ReturnType<typeof aiSdkWebhook>>): Record<string, unknown> {
  return receiver.stored.values().next().value!;
}
