import { StreamHeadStore } from '@tidemark/log';
import { decodeStamp, requestStreamId, type SessionId } from '@tidemark/protocol';
import { defineToolModule } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack, type EmbeddedStackOptions } from '@tidemark/fixtures/embedded-stack';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import {
  initializeRequest,
  MCP_HEADERS,
  MODERN_META,
  RawMcpClient,
  readSse,
} from '@tidemark/fixtures/sse';

// Issue #16's findings, each as it was observed: requests the worker's SDK would drop were
// accepted and never answered, deep JSON and odd encodings were "log unavailable", the modern lane
// skipped authentication, a reused id hung. Each is answered now, and nothing bad reaches the log.

async function setup(options: EmbeddedStackOptions = {}) {
  const stack = await embeddedStack({ partitions: 1, ...options });
  onTestFinished(() => stack.stop());
  const requestsEnd = async () => (await stack.log.offsets(stack.topics.requests, 0)).highWatermark;
  return { stack, url: stack.gateways[0]!.url, requestsEnd };
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Bodies the SDK's strict schemas refuse; the gateway used to write every one to the log. */
const MALFORMED: Record<string, string> = {
  'an extra top-level member': '{"jsonrpc":"2.0","id":7,"method":"tools/list","extra":1}',
  'a top-level __proto__': '{"jsonrpc":"2.0","id":7,"method":"tools/list","__proto__":{"x":1}}',
  'params as a string': '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":"x"}',
  'params as an array': '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}',
  'an id of 1.5': '{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
  'an id of 2^60': '{"jsonrpc":"2.0","id":1152921504606846976,"method":"tools/list"}',
  'an id of 1e400': '{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}',
  'method together with error':
    '{"jsonrpc":"2.0","id":7,"method":"tools/list","error":{"code":1,"message":"x"}}',
  'jsonrpc 1.0': '{"jsonrpc":"1.0","id":7,"method":"tools/list"}',
  // Found by the property test (test/e2e/answered.test.ts): it opened a session and never answered.
  'initialize without an id': '{"jsonrpc":"2.0","method":"initialize","params":{}}',
};

describe('one strict inbound check, before anything is written to the log', () => {
  it.each(Object.entries(MALFORMED))(
    '%s → 400 invalid request, nothing logged',
    async (_, body) => {
      const { url, requestsEnd } = await setup();
      const client = new RawMcpClient(url);
      await client.initialize();
      const before = await requestsEnd();
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          ...MCP_HEADERS,
          'Mcp-Session-Id': client.session,
          'MCP-Protocol-Version': '2025-11-25',
        },
        body,
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: -32600 } });
      expect(await requestsEnd()).toBe(before);
    },
  );

  it('64 malformed requests over 4 sessions no longer wedge anyone: a fresh client gets its exact result', async () => {
    const { url } = await setup();
    for (let s = 0; s < 4; s++) {
      const client = new RawMcpClient(url);
      await client.initialize();
      for (let i = 0; i < 16; i++) {
        const response = await client.post({
          jsonrpc: '2.0',
          id: 100 + i,
          method: 'tools/call',
          params: { name: 'count', arguments: { to: 1 } },
          extra: true,
        });
        expect(response.status).toBe(400);
      }
    }
    const fresh = await connectResumingClient(url, { name: 'fresh' });
    const result = await fresh.callTool({ name: 'count', arguments: { to: 5 } });
    expect(result.content).toEqual([{ type: 'text', text: numbers(5).join(',') }]);
  });

  it('JSON nested 5,000 deep → 400 for initialize and tools/call, on both lanes; the process keeps serving', async () => {
    const { url, requestsEnd } = await setup();
    const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const before = await requestsEnd();
    for (const [method, version] of [
      ['initialize', '2025-11-25'],
      ['tools/call', '2025-11-25'],
      ['tools/call', '2026-07-28'],
    ] as const) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'MCP-Protocol-Version': version },
        body: `{"jsonrpc":"2.0","id":1,"method":"${method}","params":${deep(5_000)}}`,
      });
      expect(response.status).toBe(400);
      // Refused from its bytes, before it is parsed: its id is not known yet.
      expect(await response.json()).toMatchObject({
        id: null,
        error: { code: -32600, message: 'Invalid Request: nested deeper than 64 levels' },
      });
    }
    expect(await requestsEnd()).toBe(before);
    const client = await connectResumingClient(url, { name: 'after' });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('a charset other than UTF-8 or an unknown Content-Encoding → 415, not "log unavailable"', async () => {
    const errors: unknown[] = [];
    const { url } = await setup({ gateway: { onError: (error) => errors.push(error) } });
    const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}';
    for (const headers of [
      { 'Content-Type': 'application/json; charset=latin1' },
      // Decoded by body-parser, but past the byte-level nesting scan (security review M2).
      { 'Content-Type': 'application/json; charset=utf-7' },
      { 'Content-Type': 'application/json; charset="UTF-16LE"' },
      { 'Content-Encoding': 'bogus' },
    ]) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...headers },
        body: init,
      });
      expect(response.status).toBe(415);
      expect(await response.json()).toMatchObject({ error: { code: -32000 } });
    }
    expect(errors).toEqual([]);
  });

  it('a batch beyond the limit → 400, nothing logged (it used to write 50,000 records)', async () => {
    const { url, requestsEnd } = await setup({ gateway: { maxBodyBytes: 4 * 1024 * 1024 } });
    const client = new RawMcpClient(url);
    await client.initialize('2025-03-26');
    const before = await requestsEnd();
    const batch = Array.from({ length: 50_000 }, () => ({
      jsonrpc: '2.0',
      method: 'notifications/initialized',
    }));
    const response = await client.post(batch, { 'MCP-Protocol-Version': '2025-03-26' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { message: 'Invalid Request: a batch of 50000 messages (at most 64)' },
    });
    expect(await requestsEnd()).toBe(before);
  });

  it('a request id reused while the first call runs → 400 at once; the first call still ends exactly', async () => {
    const { url } = await setup();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = client.callCount(5, 10, 30);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const again = await client.post({
      jsonrpc: '2.0',
      id: 5,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 2 } },
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({
      error: {
        code: -32600,
        message: 'Invalid Request: request id 5 was already used in this session',
      },
    });
    const { messages } = await first;
    expect(messages.at(-1)).toMatchObject({
      id: 5,
      result: { content: [{ type: 'text', text: numbers(10).join(',') }] },
    });
  });
});

describe('DELETE', () => {
  it('ends the session’s open streams and cancels its running calls: the stream ends with a terminal record, then its head is forgotten', async () => {
    const { stack, url } = await setup();
    const client = new RawMcpClient(url);
    await client.initialize();
    const call = client.callCount(4, 2_000, 20);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const deleted = await fetch(url, {
      method: 'DELETE',
      headers: { 'Mcp-Session-Id': client.session, 'MCP-Protocol-Version': '2025-11-25' },
    });
    expect(deleted.status).toBe(200);
    const { messages } = await call; // ends instead of running for 40 s
    const progress = messages.filter((m) => m['method'] === 'notifications/progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.length).toBeLessThan(2_000);
    expect(messages.some((m) => 'result' in m)).toBe(false);
    // The cancelled call's stream ended in the log (a terminal record)…
    const terminal = async () => {
      const read = await stack.log.fetch(stack.topics.events, 0, 0n);
      return read.records.some((record) => {
        const decoded = decodeStamp(record.headers);
        return (
          record.key === client.session &&
          decoded.ok &&
          decoded.stamp.stream === requestStreamId(4) &&
          decoded.stamp.kind === 'terminal'
        );
      });
    };
    const heads = new StreamHeadStore({ port: stack.log, topics: stack.topics, partitionCount: 1 });
    const gone = async () =>
      (await heads.get(client.session as SessionId, requestStreamId(4))) === undefined;
    for (let i = 0; i < 100 && !((await terminal()) && (await gone())); i++)
      await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await terminal()).toBe(true);
    // …and an ended session keeps no heads: nothing can resume them.
    expect(await gone()).toBe(true);
  });
});

describe('browser clients', () => {
  it('an allowed Origin gets its preflight answered and can read Mcp-Session-Id; another gets 403', async () => {
    const { url } = await setup({ gateway: { allowedOrigins: ['https://app.example'] } });
    const preflight = await fetch(url, {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type, mcp-session-id, authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Mcp-Session-Id/);
    const init = await fetch(url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, Origin: 'https://app.example' },
      body: JSON.stringify(initializeRequest()),
    });
    expect(init.status).toBe(200);
    expect(init.headers.get('access-control-expose-headers')).toMatch(/Mcp-Session-Id/);
    await init.body?.cancel();
    const other = await fetch(url, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(other.status).toBe(403);
  });
});

describe('DNS rebinding', () => {
  it('on loopback, a Host that is not a loopback name → 403 (a page rebinding its domain to 127.0.0.1)', async () => {
    const { url } = await setup();
    const port = new URL(url).port;
    const { request } = await import('node:http');
    const statusWith = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/mcp', method: 'GET', headers: { Host: host } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(await statusWith(`evil.example:${port}`)).toBe(403);
    expect(await statusWith(`localhost:${port}`)).not.toBe(403);
    expect(await statusWith(`127.0.0.1:${port}`)).not.toBe(403);
  });
});

describe('authentication on every lane', () => {
  it('the 2026-07-28 lane asks for a token like the legacy lane: 401 without one, with or without the header', async () => {
    const { url, requestsEnd } = await setup({
      gateway: {
        authenticate: (req) =>
          Promise.resolve(
            req.headers.authorization === 'Bearer good' ? { subject: 'alice' } : undefined,
          ),
      },
    });
    const modern = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...headers },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/list',
          params: {
            _meta: MODERN_META,
          },
        }),
      });
    const before = await requestsEnd();
    expect((await modern({ 'MCP-Protocol-Version': '2026-07-28' })).status).toBe(401);
    expect((await modern({})).status).toBe(401);
    expect(await requestsEnd()).toBe(before);
    const allowed = await modern({
      'MCP-Protocol-Version': '2026-07-28',
      Authorization: 'Bearer good',
    });
    expect(allowed.status).toBe(200);
  });
});

describe('every request a worker takes is answered', () => {
  it('a tool module whose register throws: the client gets a JSON-RPC error, not a hang', async () => {
    // It passes the startup probe, then fails for every session (a credential that expired since):
    // what fails at run time is answered, never left hanging.
    let registrations = 0;
    const broken = defineToolModule({
      name: 'broken',
      register() {
        if (registrations++ > 0) throw new Error('missing API_KEY');
      },
    });
    const { url } = await setup({ modules: [broken] });
    const response = await fetch(url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify(initializeRequest()),
    });
    expect(response.status).toBe(200);
    let answer: unknown;
    await readSse(response, (event) => {
      if (event.data === '') return;
      answer = JSON.parse(event.data);
      return false;
    });
    expect(answer).toMatchObject({
      id: 0,
      error: { code: -32603, message: 'Internal error: the server could not run this request' },
    });
    // The 2026-07-28 lane registers modules per request: answered the same way.
    const modern = await fetch(url, {
      method: 'POST',
      headers: { ...MCP_HEADERS, 'MCP-Protocol-Version': '2026-07-28' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/list',
        params: {
          _meta: MODERN_META,
        },
      }),
    });
    expect(modern.status).toBe(200);
    let modernAnswer: unknown;
    await readSse(modern, (event) => {
      if (event.data === '') return;
      modernAnswer = JSON.parse(event.data);
      return false;
    });
    expect(modernAnswer).toMatchObject({ id: 5, error: { code: -32603 } });
  });
});
