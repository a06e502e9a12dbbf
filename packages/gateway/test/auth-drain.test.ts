import { connect } from 'node:net';
import type { GatewayOptions } from '@tidemark/gateway';
import type { LogPort } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { MCP_HEADERS, RawMcpClient, readSse } from '@tidemark/fixtures/sse';
import { rpcResponse, sseMessages } from '@tidemark/fixtures/task-client';

type Replica = Awaited<ReturnType<typeof embeddedStack>>['gateways'][number];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const STATELESS_HEADERS = {
  'MCP-Protocol-Version': '2026-07-28',
  'Mcp-Method': 'tools/call',
  'Mcp-Name': 'count',
};
const statelessCall = {
  jsonrpc: '2.0',
  id: 9,
  method: 'tools/call',
  params: {
    name: 'count',
    arguments: { to: 30, delayMs: 50 },
    _meta: {
      progressToken: 'q',
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
};

/** One HTTP/1.1 POST of `message` to /mcp, written by hand (to pipeline it on a socket). */
function rawPost(port: number, headers: Record<string, string>, message: unknown): string {
  const body = JSON.stringify(message);
  const lines = Object.entries({
    Host: `127.0.0.1:${port}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  }).map(([name, value]) => `${name}: ${value}`);
  return `POST /mcp HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * The last message of a call whose answer on a draining replica was only its priming event,
 * resumed on another replica from that event's id.
 */
async function resumedElsewhere(answer: string, url: string, session: string) {
  const primed = [...answer.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!);
  expect(primed).toHaveLength(1);
  const rest = await new RawMcpClient(url, session).resume(primed[0]!);
  const messages: Array<Record<string, unknown>> = [];
  await readSse(rest, (event) => {
    if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
  });
  return messages.at(-1);
}

async function setup(gateway: Partial<GatewayOptions> = {}) {
  const stack = await embeddedStack({ partitions: 1, gateway: { retryMs: 777, ...gateway } });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!;
}

describe('gateway auth and drain', () => {
  it('binds a session to its bearer subject: no token → 401, another subject → 404 as if unknown', async () => {
    const tokens: Record<string, string> = { 'token-alice': 'alice', 'token-bob': 'bob' };
    const { url } = await setup({
      authenticate: (req) => {
        const subject = tokens[(req.headers.authorization ?? '').replace(/^Bearer /, '')];
        return Promise.resolve(subject === undefined ? undefined : { subject });
      },
    });
    const init = (token?: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          ...MCP_HEADERS,
          ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'a', version: '1' },
          },
        }),
      });
    const denied = await init();
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('Bearer');
    const alice = await init('token-alice');
    const session = alice.headers.get('mcp-session-id')!;
    await readSse(alice, (e) => (e.data === '' ? undefined : false));
    const list = (token: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          ...MCP_HEADERS,
          Authorization: `Bearer ${token}`,
          'Mcp-Session-Id': session,
          'MCP-Protocol-Version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
    expect((await list('token-alice')).status).toBe(202);
    expect((await list('token-bob')).status).toBe(404);
  });

  it('drain ends open streams with a retry hint, so clients resume elsewhere', async () => {
    const { gateway, url } = await setup();
    const client = new RawMcpClient(url);
    await client.initialize();
    const response = await client.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 100, delayMs: 50 }, _meta: { progressToken: 'p' } },
    });
    const body = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes('notifications/progress')) text += (await body.read()).value ?? '';
    expect(gateway.openStreams).toBe(1);
    const draining = gateway.drain();
    for (;;) {
      const { value, done } = await body.read();
      if (done) break;
      text += value;
    }
    await draining;
    expect(text).toMatch(/retry: 777\n\n$/);
    expect(gateway.openStreams).toBe(0);
  });

  it('a call that reaches a draining replica on a kept-alive connection is served: its stream ends once primed, the connection closes, the client resumes on another replica', async () => {
    const stack = await embeddedStack({
      partitions: 1,
      replicas: 2,
      gateway: { retryMs: 777, drainTimeoutMs: 5_000 },
    });
    onTestFinished(() => stack.stop());
    const [draining, other] = stack.gateways as [Replica, Replica];
    const client = new RawMcpClient(draining.url);
    await client.initialize();
    // One connection, two requests pipelined on it (so it is never idle, and no drain closes it
    // under the second): a 2026-07-28 call the drain waits for, then the session's call.
    const socket = connect(draining.port, '127.0.0.1');
    onTestFinished(() => void socket.destroy());
    let raw = '';
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(rawPost(draining.port, STATELESS_HEADERS, statelessCall));
    while (!raw.includes('notifications/progress')) await sleep(10);
    const drained = draining.gateway.drain();
    socket.write(
      rawPost(
        draining.port,
        { 'Mcp-Session-Id': client.session, 'MCP-Protocol-Version': '2025-11-25' },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'count',
            arguments: { to: 5, delayMs: 50 },
            _meta: { progressToken: 'p' },
          },
        },
      ),
    );
    await closed;
    await drained;
    // Both served; the second with Connection: close, its stream ended after its priming event.
    const answers = raw.split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.slice(0, 15))).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(answers[0]).toContain(Array.from({ length: 30 }, (_, i) => i + 1).join(','));
    expect(answers[1]).toMatch(/^connection: close\r$/im);
    expect(answers[1]).toMatch(/retry: 777\n\n/);
    // The call was written to the log: another replica streams it from the priming event on.
    expect(await resumedElsewhere(answers[1]!, other.url, client.session)).toMatchObject({
      id: 1,
      result: { content: [{ type: 'text', text: '1,2,3,4,5' }] },
    });
  });

  it('a drain ends only after the calls it answered with a priming event are in the log (their clients resume elsewhere from it)', async () => {
    // The draining replica's writes to `requests` take 400 ms once the drain begins: a drain that
    // ended when its connections closed (right after the priming event) would stop the process
    // with the call unwritten, and the client would resume a call no worker ever gets.
    let slow = false;
    let written = false;
    const stack = await embeddedStack({
      partitions: 1,
      replicas: 2,
      gateway: { retryMs: 777, drainTimeoutMs: 5_000 },
      gatewayLog: (log, replica) =>
        replica !== 0
          ? log
          : Object.assign(Object.create(log) as LogPort, {
              append: async (topic: string, records: Parameters<LogPort['append']>[1]) => {
                if (slow && topic.endsWith('requests')) await sleep(400);
                const offsets = await log.append(topic, records);
                if (slow && topic.endsWith('requests')) written = true;
                return offsets;
              },
            }),
    });
    onTestFinished(() => stack.stop());
    const [draining, other] = stack.gateways as [Replica, Replica];
    // The session begins on the other replica: the draining one has no connection but this
    // one, open before the drain and idle when it begins (nothing else holds the drain).
    const client = new RawMcpClient(other.url);
    await client.initialize();
    const socket = connect(draining.port, '127.0.0.1');
    onTestFinished(() => void socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    let raw = '';
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    slow = true;
    const drained = draining.gateway.drain();
    await sleep(50);
    socket.write(
      rawPost(
        draining.port,
        { 'Mcp-Session-Id': client.session, 'MCP-Protocol-Version': '2025-11-25' },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'count', arguments: { to: 3, delayMs: 10 } },
        },
      ),
    );
    await drained;
    expect(written).toBe(true);
    expect(await resumedElsewhere(raw, other.url, client.session)).toMatchObject({
      id: 1,
      result: { content: [{ type: 'text', text: '1,2,3' }] },
    });
  });

  it('a kept-alive connection idle when the drain begins is not closed under its client: a request written on it next is answered, with Connection: close', async () => {
    const { gateway, port } = await setup({ drainTimeoutMs: 5_000 });
    const socket = connect(port, '127.0.0.1');
    onTestFinished(() => void socket.destroy());
    let raw = '';
    socket.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const list = (id: number) =>
      rawPost(
        port,
        { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' },
        { jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: statelessCall.params._meta } },
      );
    socket.write(list(1));
    while (!raw.includes('"id":1')) await sleep(10);
    // Idle now (kept alive); the drain begins, and the client — not knowing — sends its next request.
    const drained = gateway.drain();
    await sleep(100);
    socket.write(list(2));
    await closed;
    await drained;
    const answers = raw.split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.slice(0, 15))).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    expect(answers[1]).toContain('"id":2');
    expect(answers[1]).toMatch(/^connection: close\r$/im);
  });

  it('drain lets a 2026-07-28 call in flight end (its client cannot resume it elsewhere: closing would cancel it), up to drainTimeoutMs', async () => {
    const { gateway, url } = await setup({ drainTimeoutMs: 5_000 });
    const session = new RawMcpClient(url);
    await session.initialize();
    const sessionCall = await session.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 100, delayMs: 50 }, _meta: { progressToken: 'p' } },
    });
    // A stateless call of ~1.5 s, not a task: its answer is the open response.
    const stateless = await rpcResponse(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 30, delayMs: 50 } },
      { tasks: false },
    );
    await vi.waitUntil(() => gateway.openStreams === 2, { timeout: 10_000, interval: 20 });
    const drainedAt = Date.now();
    const draining = gateway.drain();
    // The session's stream ends at once, with a resume point.
    expect(await sessionCall.text()).toMatch(/retry: 777\n\n$/);
    expect(Date.now() - drainedAt).toBeLessThan(1_000);
    // The stateless call runs to its end.
    const messages = sseMessages(await stateless.text());
    expect(messages.at(-1)).toMatchObject({
      result: {
        content: [{ type: 'text', text: Array.from({ length: 30 }, (_, i) => i + 1).join(',') }],
      },
    });
    await draining;
    expect(gateway.openStreams).toBe(0);
  });

  it('drain ends a 2026-07-28 call that outlives drainTimeoutMs', async () => {
    const { gateway, url } = await setup({ drainTimeoutMs: 500 });
    const stateless = await rpcResponse(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 200, delayMs: 50 } },
      { tasks: false },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const drainedAt = Date.now();
    await gateway.drain();
    expect(Date.now() - drainedAt).toBeLessThan(2_000);
    const text = await stateless.text().catch(() => '');
    expect(sseMessages(text).some((m) => 'result' in m)).toBe(false);
    expect(gateway.openStreams).toBe(0);
  });
});
