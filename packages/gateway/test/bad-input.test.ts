import { connect } from 'node:net';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { MCP_HEADERS, RawMcpClient, readSse } from '@tidemark/fixtures/sse';

let url = '';
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const stack = await embeddedStack({ partitions: 1, gateway: { maxBodyBytes: 10_000 } });
  url = stack.gateways[0]!.url;
  cleanup = () => stack.stop();
});
afterAll(() => cleanup());

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body });

async function errorOf(response: Response) {
  return {
    status: response.status,
    body: (await response.json()) as { error?: { code: number; message: string } },
  };
}

describe('the gateway refuses bad input clearly and keeps serving', () => {
  it('malformed JSON → 400 parse error', async () => {
    expect(await errorOf(await post('{"jsonrpc": "2.0", "id": 1,'))).toMatchObject({
      status: 400,
      body: { error: { code: -32700 } },
    });
  });

  it('not JSON-RPC → 400 invalid request', async () => {
    expect(await errorOf(await post('{"hello": "world"}'))).toMatchObject({
      status: 400,
      body: { error: { code: -32600 } },
    });
    expect(await errorOf(await post('[]'))).toMatchObject({ status: 400 });
  });

  it('wrong content type → 415; no acceptable type → 406', async () => {
    expect((await post('{}', { 'Content-Type': 'text/plain' })).status).toBe(415);
    expect((await post('{}', { Accept: 'text/html' })).status).toBe(406);
    expect((await fetch(url, { headers: { Accept: 'text/html' } })).status).toBe(406);
  });

  it('an oversize body → 413', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { pad: 'x'.repeat(20_000) },
    });
    expect((await post(big)).status).toBe(413);
  });

  it('a missing session header → 400; a bogus or unknown session id → 404', async () => {
    const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect((await post(call)).status).toBe(400);
    expect((await post(call, { 'Mcp-Session-Id': 'not a session' })).status).toBe(404);
    expect((await post(call, { 'Mcp-Session-Id': 'AAAAAAAAAAAAAAAAAAAAAA' })).status).toBe(404);
  });

  it('an unsupported protocol version → 400; a foreign Origin → 403; PUT → 405', async () => {
    const client = new RawMcpClient(url);
    await client.initialize();
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
    expect((await client.post(list, { 'MCP-Protocol-Version': '1999-01-01' })).status).toBe(400);
    expect((await client.post(list, { Origin: 'https://evil.example' })).status).toBe(403);
    expect((await fetch(url, { method: 'PUT' })).status).toBe(405);
  });

  it('header injection is refused before it reaches the app, and the process keeps serving', async () => {
    // A raw request whose session header smuggles a second header line after a bare CR.
    const target = new URL(url);
    const status = await new Promise<string>((resolve) => {
      const socket = connect(Number(target.port), target.hostname, () => {
        socket.write(
          `POST ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nContent-Type: application/json\r\n` +
            `Mcp-Session-Id: abc\rX-Evil: 1\r\nContent-Length: 2\r\n\r\n{}`,
        );
      });
      let head = '';
      socket.on('data', (chunk) => {
        head += chunk.toString();
        if (head.includes('\r\n')) {
          resolve(head.split('\r\n')[0] ?? '');
          socket.destroy();
        }
      });
      socket.on('error', () => resolve('error'));
    });
    expect(status).toMatch(/^HTTP\/1\.1 400/);
    expect(() => new Headers({ 'Mcp-Session-Id': 'abc\r\nX-Evil: 1' })).toThrow();
    const client = new RawMcpClient(url);
    await client.initialize();
    const { messages } = await client.callCount(1, 3, 0);
    expect(messages.at(-1)).toMatchObject({ id: 1, result: { content: [{ text: '1,2,3' }] } });
  });

  it('DELETE ends the session: later requests get 404', async () => {
    const client = new RawMcpClient(url);
    await client.initialize();
    const deleted = await fetch(url, {
      method: 'DELETE',
      headers: { 'Mcp-Session-Id': client.session },
    });
    expect(deleted.status).toBe(200);
    expect((await client.post({ jsonrpc: '2.0', id: 3, method: 'tools/list' })).status).toBe(404);
  });
});

describe('version negotiation: the session keeps the revision initialize agreed on', () => {
  /** Initializes asking `asked`; returns the session and the revision the answer names. */
  async function initialize(asked: string) {
    const response = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: asked,
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    );
    expect(response.status).toBe(200);
    let agreed = '';
    await readSse(response, (event) => {
      if (event.data === '') return;
      agreed = (JSON.parse(event.data) as { result: { protocolVersion: string } }).result
        .protocolVersion;
      return false;
    });
    return { session: response.headers.get('mcp-session-id')!, agreed };
  }

  const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });

  // Each revision an official SDK can ask for (the Go SDK pins 2024-11-05), and two it cannot be
  // served: the newest is agreed instead, and later requests are checked against that.
  it.each([
    ['2024-11-05', '2024-11-05'],
    ['2025-03-26', '2025-03-26'],
    ['2025-06-18', '2025-06-18'],
    ['2025-11-25', '2025-11-25'],
    ['2025-01-01', '2025-11-25'],
    ['2024-10-07', '2025-11-25'],
  ])(
    'asked %s: agreed %s, and later requests with or without the header are served',
    async (asked, expected) => {
      const { session, agreed } = await initialize(asked);
      expect(agreed).toBe(expected);
      const headers = { 'Mcp-Session-Id': session };
      expect((await post(list, headers)).status).toBe(200);
      expect((await post(list, { ...headers, 'MCP-Protocol-Version': agreed })).status).toBe(200);
      expect((await post(list, { ...headers, 'MCP-Protocol-Version': '2025-01-01' })).status).toBe(
        400,
      );
    },
  );
});
