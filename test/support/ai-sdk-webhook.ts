import { experimental_createMCPEventWebhook as createMCPEventWebhook } from '@ai-sdk/mcp';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { onTestFinished } from 'vitest';

// The Vercel AI SDK's MCP Events webhook receiver (`experimental_createMCPEventWebhook`), mounted
// on a loopback HTTP server, with the private store its client and handler share: a receiver
// nobody here wrote, verifying every delivery's Standard Webhooks signature itself. Each delivery
// is also verified with the `standardwebhooks` library; `unverified` counts those that fail it.

type Subscription = Record<string, unknown> & { key: string };
type Handler = Parameters<typeof createMCPEventWebhook>[0];

export interface AiSdkWebhook {
  /** The callback URL to subscribe with (the client adds its routing key to the query). */
  readonly url: string;
  /** The store the client's `experimental_events` must use, and what it holds. */
  readonly store: Handler['store'];
  readonly stored: ReadonlyMap<string, Subscription>;
  /** What the handler passed on, in order, and each HTTP answer it gave. */
  readonly events: Array<{
    eventId: string;
    data: Record<string, unknown>;
    cursor?: string | null;
  }>;
  readonly gaps: unknown[];
  readonly terminations: unknown[];
  readonly statuses: number[];
  /** Deliveries the `standardwebhooks` library did not verify with the subscription's secret. */
  unverified: number;
  /** While set, the status it gives for a body is answered instead of the handler's (an outage). */
  refuse: ((body: Record<string, unknown>) => number | undefined) | undefined;
}

export async function aiSdkWebhook(): Promise<AiSdkWebhook> {
  const stored = new Map<string, Subscription>();
  const store = {
    get: (key: string) => Promise.resolve(stored.get(key) as never),
    getById: (id: string) =>
      Promise.resolve([...stored.values()].find((s) => s['id'] === id) as never),
    set: (subscription: Subscription) =>
      Promise.resolve(void stored.set(subscription.key, subscription)),
    update: (key: string, patch: object) =>
      Promise.resolve(void (stored.has(key) && stored.set(key, { ...stored.get(key)!, ...patch }))),
    delete: (key: string) => Promise.resolve(void stored.delete(key)),
  } as unknown as Handler['store'];
  const receiver: Omit<AiSdkWebhook, 'url'> = {
    store,
    stored,
    events: [],
    gaps: [],
    terminations: [],
    statuses: [],
    unverified: 0,
    refuse: undefined,
  };
  const handle = createMCPEventWebhook({
    store,
    onEvent: ({ event }) => Promise.resolve(void receiver.events.push(event as never)),
    onGap: ({ gap }) => Promise.resolve(void receiver.gaps.push(gap)),
    onTerminated: ({ termination }) =>
      Promise.resolve(void receiver.terminations.push(termination)),
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const refused = receiver.refuse?.(JSON.parse(Buffer.concat(chunks).toString()) as never);
      if (refused !== undefined) {
        receiver.statuses.push(refused);
        res.writeHead(refused).end();
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string') headers.set(name, value);
      const key = new URL(req.url ?? '/', 'http://receiver').searchParams.get(
        'mcp_event_subscription',
      );
      const secret = (stored.get(key ?? '')?.['delivery'] as { secret?: string } | undefined)
        ?.secret;
      try {
        new Webhook(secret ?? '').verify(
          Buffer.concat(chunks).toString(),
          Object.fromEntries(headers),
        );
      } catch {
        receiver.unverified++;
      }
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method ?? 'POST',
        headers,
        body: Buffer.concat(chunks),
      });
      void handle(request).then(async (response) => {
        receiver.statuses.push(response.status);
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end(Buffer.from(await response.arrayBuffer()));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onTestFinished(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/mcp/events` });
}
