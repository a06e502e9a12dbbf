import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import events from '@tidemark/examples/events';
import {
  EVENTS_EXTENSION,
  eventStreamKey,
  partitionForSession,
  type SessionId,
} from '@tidemark/protocol';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { rpc, rpcResponse, sseMessages } from '@tidemark/fixtures/task-client';

// The Events extension's poll and push deliveries end to end on the embedded log, with two
// gateway replicas: the source of a stream runs on the worker that owns its partition once
// someone polls it, and a cursor from either replica resumes on the other.

async function setup(worker: { eventPushMaxMs?: number; maxEventStreamsPerSubject?: number } = {}) {
  const stack = await embeddedStack({
    replicas: 2,
    modules: [events],
    worker: { eventScanMs: 50, eventHeartbeatMs: 300, ...worker },
  });
  onTestFinished(() => stack.stop());
  return { stack, urls: stack.gateways.map((g) => g.url) };
}

const ticks = (everyMs: number) => ({ name: 'ticks', arguments: { everyMs } });
type Polled = { events: Array<{ data: { n: number }; eventId: string }>; cursor: string };

/** Reads an SSE response until `enough` holds for its messages (at most 10 s). */
async function readUntil(
  response: Response,
  enough: (messages: Array<Record<string, unknown>>) => boolean,
): Promise<Array<Record<string, unknown>>> {
  const decoder = new TextDecoder();
  let text = '';
  const deadline = setTimeout(() => void response.body?.cancel(), 10_000);
  try {
    for await (const chunk of response.body as ReadableStream<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if (enough(sseMessages(text))) return sseMessages(text);
    }
  } finally {
    clearTimeout(deadline);
  }
  throw new Error(`the stream ended first: ${text}`);
}

const methodsOf = (messages: Array<Record<string, unknown>>) => messages.map((m) => m['method']);

/** Polls (each URL in turn) from `cursor` until `count` occurrences arrived. */
async function pollUntil(urls: readonly string[], cursor: string, count: number) {
  const seen: Polled['events'] = [];
  for (let i = 0; seen.length < count; i++) {
    const { body } = await rpc(urls[i % urls.length]!, 'events/poll', { ...ticks(20), cursor });
    if (body.result === undefined) throw new Error(JSON.stringify(body));
    const page = body.result as unknown as Polled & { truncated: boolean };
    expect(page.truncated).toBe(false);
    seen.push(...page.events);
    cursor = page.cursor;
    if (page.events.length === 0) await new Promise((resolve) => setTimeout(resolve, 30));
  }
  return { seen, cursor };
}

describe('Events extension (io.modelcontextprotocol/events): poll and push', () => {
  it('server/discover advertises it, and events/list lists the module’s event types', async () => {
    const { urls } = await setup();
    const discover = await rpc(urls[0]!, 'server/discover', {});
    expect(discover.body.result?.['capabilities']).toMatchObject({
      extensions: { [EVENTS_EXTENSION]: {} },
    });
    const list = await rpc(urls[1]!, 'events/list', {});
    const listed = (list.body.result as { events: Array<Record<string, unknown>> }).events;
    expect(listed.map((type) => type['name'])).toEqual(['ticks', 'incidents', 'deployments']);
    expect(listed[0]).toMatchObject({
      name: 'ticks',
      delivery: ['poll', 'push', 'webhook'],
      inputSchema: { type: 'object', properties: { everyMs: { type: 'integer' } } },
      payloadSchema: { type: 'object' },
    });
  });

  it('polls from now, then every occurrence once and in order, resuming on either replica', async () => {
    const { urls } = await setup();
    const start = await rpc(urls[0]!, 'events/poll', ticks(20));
    expect(start.body.result).toMatchObject({ events: [], truncated: false });
    const { seen } = await pollUntil(urls, String(start.body.result!['cursor']), 8);
    expect(seen.map((event) => event.data.n)).toEqual(seen.map((_, i) => i + 1));
    expect(new Set(seen.map((event) => event.eventId)).size).toBe(seen.length);
  });

  it('answers truncated, with a cursor to go on from, when retention took what the poller missed', async () => {
    const { urls, stack } = await setup();
    const start = await rpc(urls[0]!, 'events/poll', ticks(20));
    const { cursor } = await pollUntil(urls, String(start.body.result!['cursor']), 3);
    await new Promise((resolve) => setTimeout(resolve, 200)); // more ticks, unpolled
    const partition = partitionForSession(eventStreamKey('ticks', { everyMs: 20 }) as SessionId, 2);
    const { occurrences } = stack.topics;
    const { highWatermark } = await stack.log.offsets(occurrences, partition);
    await stack.log.deleteRecordsBefore(occurrences, partition, highWatermark);
    const late = await rpc(urls[1]!, 'events/poll', { ...ticks(20), cursor });
    expect(late.body.result).toMatchObject({ truncated: true });
    const { seen } = await pollUntil(urls, String(late.body.result!['cursor']), 3);
    expect(seen.map((event) => event.data.n)).toEqual(seen.map((_, i) => seen[0]!.data.n + i));
  });

  it('refuses a forged cursor, an unknown type and arguments that do not match', async () => {
    const { urls } = await setup();
    const start = await rpc(urls[0]!, 'events/poll', ticks(20));
    const cursor = String(start.body.result!['cursor']);
    const forged = `${cursor.slice(0, -2)}${cursor.endsWith('A') ? 'BB' : 'AA'}`;
    const refused = await rpc(urls[0]!, 'events/poll', { ...ticks(20), cursor: forged });
    expect(refused.body.error).toMatchObject({ code: -32602, message: /cursor refused/ });
    const other = await rpc(urls[0]!, 'events/poll', { ...ticks(30), cursor });
    expect(other.body.error).toMatchObject({ code: -32602, message: /cursor refused/ });
    const unknown = await rpc(urls[0]!, 'events/poll', { name: 'nope', arguments: {} });
    expect(unknown.body.error).toMatchObject({ code: -32602, message: /unknown event type/ });
    const bad = await rpc(urls[0]!, 'events/poll', { name: 'ticks', arguments: { everyMs: 1 } });
    expect(bad.body.error).toMatchObject({ code: -32602, message: /everyMs/ });
  });

  it('pushes occurrences as notifications on events/stream, with heartbeats, from a cursor', async () => {
    const { urls } = await setup();
    const start = await rpc(urls[0]!, 'events/poll', ticks(20));
    const { cursor, seen } = await pollUntil(urls, String(start.body.result!['cursor']), 3);
    const abort = new AbortController();
    const response = await rpcResponse(
      urls[1]!,
      'events/stream',
      { ...ticks(20), cursor },
      { signal: abort.signal },
    );
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const messages = await readUntil(
      response,
      (m) => methodsOf(m).filter((method) => method === 'notifications/events/event').length > 4,
    );
    abort.abort();
    expect(messages[0]).toMatchObject({
      method: 'notifications/events/active',
      params: { cursor },
    });
    const numbers = messages
      .filter((m) => m['method'] === 'notifications/events/event')
      .map((m) => (m['params'] as { data: { n: number } }).data.n);
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0]! + i));
    expect(numbers[0]).toBe(seen.length + 1); // exactly after the cursor
  });

  it('sends a heartbeat with the cursor when nothing happens, and stops when the client leaves', async () => {
    const { urls, stack } = await setup();
    const abort = new AbortController();
    const response = await rpcResponse(urls[0]!, 'events/stream', ticks(60_000), {
      signal: abort.signal,
    });
    const [active, heartbeat] = await readUntil(response, (m) =>
      methodsOf(m).includes('notifications/events/heartbeat'),
    );
    abort.abort();
    expect(active).toMatchObject({ method: 'notifications/events/active' });
    expect(heartbeat).toMatchObject({
      method: 'notifications/events/heartbeat',
      params: { cursor: (active!['params'] as { cursor: string }).cursor },
    });
    // The push stream's request ends with the client: its call slot is free again.
    await vi.waitFor(() => expect(stack.worker.slotReport().calls.busy).toBe(0), {
      timeout: 5_000,
    });
  });

  it('a session-lane push ends when its connection closes: its slot freed, not held for nobody (security review H2)', async () => {
    const { urls, stack } = await setup();
    const client = new RawMcpClient(urls[0]!);
    await client.initialize();
    const abort = new AbortController();
    const response = await client.post(
      { jsonrpc: '2.0', id: 7, method: 'events/stream', params: ticks(60_000) },
      {},
      abort.signal,
    );
    await readUntil(response, (m) => methodsOf(m).includes('notifications/events/active'));
    expect(stack.worker.slotReport().calls.busy).toBe(1);
    abort.abort();
    await vi.waitFor(() => expect(stack.worker.slotReport().calls.busy).toBe(0), {
      timeout: 5_000,
    });
  });

  it('a push stream has a bounded life: answered with the cursor to go on from, its slot freed, the next push exactly after it (security review H2)', async () => {
    const { urls, stack } = await setup({ eventPushMaxMs: 1_000 });
    const start = await rpc(urls[0]!, 'events/poll', ticks(50));
    // No abort: the client stays, the server ends it.
    const response = await rpcResponse(urls[0]!, 'events/stream', {
      ...ticks(50),
      cursor: String(start.body.result!['cursor']),
    });
    const messages = await readUntil(response, (m) => m.some((message) => 'result' in message));
    const numbers = (list: Array<Record<string, unknown>>) =>
      list
        .filter((m) => m['method'] === 'notifications/events/event')
        .map((m) => (m['params'] as { data: { n: number } }).data.n);
    const first = numbers(messages);
    expect(first.length).toBeGreaterThan(0);
    const { cursor } = messages.find((m) => 'result' in m)!['result'] as { cursor: string };
    expect(typeof cursor).toBe('string');
    await vi.waitFor(() => expect(stack.worker.slotReport().calls.busy).toBe(0), {
      timeout: 5_000,
    });
    // From its cursor, the next push goes on exactly after the last event the first one sent.
    const abort = new AbortController();
    const next = await rpcResponse(
      urls[1]!,
      'events/stream',
      { ...ticks(50), cursor },
      { signal: abort.signal },
    );
    const more = await readUntil(next, (m) => numbers(m).length > 0);
    abort.abort();
    expect(numbers(more)[0]).toBe(first.at(-1)! + 1);
  });

  it('a subject reads a bounded number of streams at once: a new one past it is refused, the ones it reads are not (security review M5)', async () => {
    const { urls, stack } = await setup({ maxEventStreamsPerSubject: 3 });
    for (const everyMs of [1_000, 1_001, 1_002])
      expect((await rpc(urls[0]!, 'events/poll', ticks(everyMs))).body.result).toBeDefined();
    const refused = await rpc(urls[1]!, 'events/poll', ticks(1_003));
    expect(refused.body.error?.code).toBe(-32600);
    expect(refused.body.error?.message).toMatch(/reads 3 event streams, the most it may/);
    // The streams it reads go on; nothing was started for the refused one.
    expect((await rpc(urls[1]!, 'events/poll', ticks(1_001))).body.result).toBeDefined();
    await vi.waitFor(() => expect(stack.worker.eventWork.sources).toHaveLength(3), {
      timeout: 5_000,
    });
  });
});

describe('Events extension: occurrences from code and from an upstream', () => {
  it('a tool emits: record_deployment reaches the pollers of that service’s deployments', async () => {
    const { urls } = await setup();
    const api = { name: 'deployments', arguments: { service: 'api' } };
    const start = await rpc(urls[0]!, 'events/poll', api);
    const other = await rpc(urls[0]!, 'events/poll', { ...api, arguments: { service: 'web' } });
    const called = await rpc(
      urls[1]!,
      'tools/call',
      {
        name: 'record_deployment',
        arguments: { service: 'api', version: '1.2.3' },
      },
      { tasks: false },
    );
    expect(JSON.stringify(called.body.result)).toContain('deployment of api 1.2.3 recorded');
    const polled = await rpc(urls[1]!, 'events/poll', {
      ...api,
      cursor: start.body.result!['cursor'],
    });
    expect(polled.body.result).toMatchObject({
      events: [{ name: 'deployments', data: { version: '1.2.3', by: 'anonymous' } }],
    });
    const web = await rpc(urls[1]!, 'events/poll', {
      ...api,
      arguments: { service: 'web' },
      cursor: other.body.result!['cursor'],
    });
    expect(web.body.result).toMatchObject({ events: [] });
  });

  it('a source reads an upstream by position: each appended incident once, a bad line skipped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-feeds-'));
    process.env['TIDEMARK_EXAMPLE_FEEDS'] = dir;
    onTestFinished(() => {
      delete process.env['TIDEMARK_EXAMPLE_FEEDS'];
      rmSync(dir, { recursive: true, force: true });
    });
    const feed = join(dir, 'prod.jsonl');
    writeFileSync(feed, `${JSON.stringify(incident('old'))}\n`); // before anyone asked: not replayed
    const { urls } = await setup();
    const prod = { name: 'incidents', arguments: { feed: 'prod' } };
    const start = await rpc(urls[0]!, 'events/poll', prod);
    let cursor = String(start.body.result!['cursor']);
    const poll = async () => {
      const { body } = await rpc(urls[1]!, 'events/poll', { ...prod, cursor });
      const page = body.result as { events: Array<{ eventId: string }>; cursor: string };
      cursor = page.cursor;
      return page.events.map((event) => event.eventId);
    };
    // The source starts from the feed's end once someone asks: probe until it reads.
    await vi.waitFor(
      async () => {
        appendFileSync(feed, `${JSON.stringify(incident('probe'))}\n`);
        expect(await poll()).toContain('inc_probe');
      },
      { timeout: 10_000, interval: 200 },
    );
    appendFileSync(
      feed,
      `${JSON.stringify(incident('a'))}\nnot json\n${JSON.stringify(incident('b'))}\n`,
    );
    const seen: string[] = [];
    await vi.waitFor(
      async () => {
        seen.push(...(await poll()).filter((id) => id !== 'inc_probe'));
        expect(seen).toEqual(['inc_a', 'inc_b']);
      },
      { timeout: 10_000, interval: 100 },
    );
  });
});

function incident(id: string) {
  return { id, severity: 'P1', service: 'api', summary: `incident ${id}` };
}
