import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pythonWithMcp } from '../support/prerequisites.js';
import { supportScript } from '../support/processes.js';

// Idempotency keys sent by clients nobody here wrote, the way the README shows: the key in the
// call's `_meta`, at protocol 2026-07-28.

async function stack() {
  const api = new PretendPayments(undefined);
  const started = await embeddedStack({ replicas: 2, modules: [paymentsModule(api)] });
  onTestFinished(() => started.stop());
  return { urls: started.gateways.map((g) => g.url), api };
}

describe('idempotency keys from the official clients', () => {
  it('the official TypeScript client: the same key through two gateways is one charge; other arguments are refused', async () => {
    const { urls, api } = await stack();
    const connect = async (url: string) => {
      const client = new Client(
        { name: 'keyed', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      onTestFinished(() => client.close());
      return client;
    };
    const key = randomUUID();
    const pay = (client: Client, amountCents: number) =>
      client.callTool({
        name: 'pay',
        arguments: { to: 'ada@example.com', amountCents },
        _meta: { 'io.tidemark/idempotency-key': key },
      });
    const first = await pay(await connect(urls[0]!), 5);
    const again = await pay(await connect(urls[1]!), 5);
    expect(again.structuredContent).toEqual(first.structuredContent);
    await expect(pay(await connect(urls[0]!), 6)).rejects.toThrow(/idempotency key was used/);
    expect(api.entries().filter((e) => e.kind === 'charge')).toHaveLength(1);
  });

  it('the official Python client (mcp on PyPI): the same key is one charge; other arguments are refused', async () => {
    const { urls, api } = await stack();
    const { stdout } = await promisify(execFile)(
      pythonWithMcp(),
      [supportScript('python_keyed_client.py'), urls[0]!, randomUUID()],
      { timeout: 60_000 },
    );
    const seen = JSON.parse(stdout) as { first: string; again: string; refused: unknown };
    expect(seen).toMatchObject({
      protocolVersion: '2026-07-28',
      refused: { code: -32602, reason: 'idempotency-key-reused' },
    });
    expect(seen.again).toBe(seen.first);
    expect(api.entries().filter((e) => e.kind === 'charge')).toEqual([
      expect.objectContaining({ id: seen.first }),
    ]);
  });
});
