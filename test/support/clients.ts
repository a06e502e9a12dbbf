import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { onTestFinished } from 'vitest';

/**
 * The official v2 client, connected and closed when the test ends, reconnecting quickly (with
 * `Last-Event-ID`) when its stream drops — as the resume tests need.
 */
export async function connectResumingClient(
  url: string,
  options: {
    name: string;
    initialDelayMs?: number;
    maxDelayMs?: number;
    growFactor?: number;
    maxRetries?: number;
  },
): Promise<Client> {
  const client = new Client({ name: options.name, version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      reconnectionOptions: {
        initialReconnectionDelay: options.initialDelayMs ?? 100,
        maxReconnectionDelay: options.maxDelayMs ?? 500,
        reconnectionDelayGrowFactor: options.growFactor ?? 1.5,
        maxRetries: options.maxRetries ?? 20,
      },
    }),
  );
  onTestFinished(() => client.close().catch(() => undefined));
  return client;
}
