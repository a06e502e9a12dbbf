import { connect } from 'node:net';
import { tokenFileAuthenticator, type GatewayOptions } from '@tidemark/gateway';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// Limits on what a stranger can hold or send, each answered clearly (issue #16).

async function setup(gateway: Partial<GatewayOptions>) {
  const stack = await embeddedStack({ partitions: 1, gateway });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!.url;
}

/** Writes raw bytes to the gateway; resolves with what came back before the socket closed. */
/**
 * Writes `chunks` to a raw connection `gapMs` apart; resolves when the server closes it, with what
 * it answered and how many chunks were written by then (ordered by events, not by a clock: fewer
 * than all means the server closed while the client was still sending).
 */
function raw(
  url: string,
  chunks: string[],
  gapMs: number,
): Promise<{ reply: string; sent: number }> {
  const target = new URL(url);
  return new Promise((resolve) => {
    let reply = '';
    let sent = 0;
    const socket = connect(Number(target.port), target.hostname, () => {
      const next = () => {
        if (sent >= chunks.length || socket.destroyed) return;
        socket.write(chunks[sent++]!);
        setTimeout(next, gapMs);
      };
      next();
    });
    socket.on('data', (data) => (reply += data.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ reply, sent }));
  });
}

describe('limits', () => {
  it('requests per subject per second: past the burst → 429 with Retry-After', async () => {
    const url = await setup({
      authenticate: tokenFileAuthenticator('alice-token-0123456789 alice\n'),
      maxRequestsPerSecond: 5,
    });
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 20; i++) {
      const response = await fetch(url, {
        headers: { Accept: 'text/event-stream', Authorization: 'Bearer alice-token-0123456789' },
      });
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get('retry-after');
      await response.body?.cancel();
    }
    // The first ten (twice the rate) reach the handler (400: no session); the rest are limited.
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(400));
    expect(statuses.slice(10)).toEqual(Array(10).fill(429));
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });

  it('open streams per session: one past the limit → 429, and the session keeps working', async () => {
    const url = await setup({ maxStreamsPerSession: 2 });
    const client = new RawMcpClient(url);
    await client.initialize();
    const get = () =>
      fetch(url, {
        headers: {
          Accept: 'text/event-stream',
          'Mcp-Session-Id': client.session,
          'MCP-Protocol-Version': '2025-11-25',
        },
      });
    const open = [await get(), await get()];
    expect(open.map((r) => r.status)).toEqual([200, 200]);
    const third = await get();
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({
      error: { message: 'Too many open streams in this session (limit 2); close one first' },
    });
    for (const response of open) await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { messages } = await client.callCount(1, 3, 0);
    expect(messages.at(-1)).toMatchObject({ id: 1, result: {} });
  });

  it('a body trickled slower than the request timeout → 408 and the connection closes', async () => {
    const url = await setup({ requestTimeoutMs: 1_000, headersTimeoutMs: 1_000 });
    const path = new URL(url).pathname;
    const head =
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      'Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n';
    const trickle = [head, ...Array.from({ length: 20 }, () => '{')];
    const { reply, sent } = await raw(url, trickle, 500);
    expect(reply).toMatch(/^HTTP\/1\.1 408/);
    expect(sent).toBeLessThan(trickle.length); // closed while the client still trickled
  });

  it('connections past the cap are closed at accept; the ones held keep working', async () => {
    const url = await setup({ maxConnections: 2 });
    const target = new URL(url);
    const held = await Promise.all(
      [1, 2].map(
        () =>
          new Promise<ReturnType<typeof connect>>((resolve) => {
            const socket = connect(Number(target.port), target.hostname, () => resolve(socket));
          }),
      ),
    );
    onTestFinished(() => held.forEach((socket) => socket.destroy()));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The request goes out a line at a time: a connection closed at accept is closed before it ends.
    const request = [
      'GET /healthz HTTP/1.1\r\n',
      'Host: 127.0.0.1\r\n',
      ...Array<string>(8).fill('X-Pad: 1\r\n'),
      '\r\n',
    ];
    const { reply, sent } = await raw(url, request, 200);
    expect(reply).toBe('');
    expect(sent).toBeLessThan(request.length);
    held.forEach((socket) => socket.destroy());
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await fetch(url, { method: 'PUT' })).status).toBe(405);
  });

  it('an oversize body is refused with 413 and the connection closed, not read to its end', async () => {
    const url = await setup({ maxBodyBytes: 10_000 });
    const path = new URL(url).pathname;
    const head =
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`;
    // Only the first kilobytes of the declared 50 MB are ever sent.
    const { reply } = await raw(url, [head, 'x'.repeat(4096)], 50);
    expect(reply).toMatch(/^HTTP\/1\.1 413/);
    expect(reply.toLowerCase()).toContain('connection: close');
  });
});
