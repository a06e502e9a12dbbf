// The Vercel AI SDK's MCP client (`@ai-sdk/mcp`, pinned in package.json), unmodified, as the
// Events client ChatGPT-style hosts use: it lists the tools and event types and subscribes a
// webhook, whose deliveries its own handler verifies (test/support/ai-sdk-webhook.ts).
import { createMCPClient } from '@ai-sdk/mcp';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { aiSdkWebhook } from '../support/ai-sdk-webhook.js';
import { useDeployment } from './deployments.js';
import { recorder, type Deployment } from './matrix.js';

async function connect(url: string, store?: Awaited<ReturnType<typeof aiSdkWebhook>>['store']) {
  const client = await createMCPClient({
    transport: { type: 'http', url },
    ...(store === undefined ? {} : { experimental_events: { store } }),
  });
  onTestFinished(() => client.close());
  return client;
}

describe.each<Deployment>(['dev', 'kafka'])('the AI SDK MCP client on %s', (deployment) => {
  const current = useDeployment(deployment);
  const saw = recorder('ai-sdk', deployment);

  it('connects, lists the tools and calls one', async () => {
    const client = await connect(current().urls[0]);
    const tools = await client.tools();
    expect(Object.keys(tools)).toEqual(expect.arrayContaining(['count', 'confirm_deploy']));
    const counted = await tools['count']!.execute(
      { to: 3 },
      { toolCallId: 'interop', messages: [], context: {} },
    );
    expect(counted).toMatchObject({ content: [{ type: 'text', text: '1,2,3' }] });
    saw('handshake', 'connected, listed the tools, called one: exact result', {
      revisions: ['its own (not pinnable)'],
    });
  });

  it('events: subscribes a webhook; its handler gets every occurrence once, in order, signed', async () => {
    const receiver = await aiSdkWebhook();
    const client = await connect(current().urls[0], receiver.store);
    const types = await client.experimental_events.list();
    expect(types.events.map((event) => event.name)).toEqual(
      expect.arrayContaining(['ticks', 'incidents', 'deployments']),
    );
    const subscription = await client.experimental_events.subscribe({
      name: 'ticks',
      arguments: { everyMs: 50 },
      delivery: { mode: 'webhook', url: receiver.url, allowInsecureLocalhost: true },
    });
    await vi.waitFor(() => expect(receiver.events.length).toBeGreaterThanOrEqual(5), {
      timeout: 30_000,
    });
    const ticks = receiver.events.map((event) => event.data['n']);
    expect(ticks).toEqual(ticks.map((_, i) => i + 1));
    expect(receiver.unverified).toBe(0);
    await client.experimental_events.unsubscribe({ id: subscription.id });
    saw(
      'events',
      'subscribed a webhook: every tick once and in order, each signature verified; unsubscribed',
    );
  });
});
