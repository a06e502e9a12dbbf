import { tokenFileAuthenticator, type GatewayOptions } from '@tidemark/gateway';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { initializeRequest, MCP_HEADERS } from '@tidemark/fixtures/sse';
import { rpcResponse } from '@tidemark/fixtures/task-client';

// What one subject may hold on a replica (issue #33): live sessions and open streams of every
// kind, each refused with 429 past its cap while another subject is served. Unauthenticated
// clients are counted by address; this machine's own are exempt, as from the rate limit.

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-01234567890';

async function setup(gateway: Partial<GatewayOptions>) {
  const stack = await embeddedStack({
    partitions: 1,
    gateway: { authenticate: tokenFileAuthenticator(`${ALICE} alice\n${BOB} bob\n`), ...gateway },
  });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!.url;
}

function initialize(url: string, token: string) {
  return fetch(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, Authorization: `Bearer ${token}` },
    body: JSON.stringify(initializeRequest()),
  });
}

/** Opens the session's standalone GET stream; the response (its body left open). */
function listen(url: string, token: string, session: string) {
  return fetch(url, {
    headers: {
      Accept: 'text/event-stream',
      Authorization: `Bearer ${token}`,
      'Mcp-Session-Id': session,
      'MCP-Protocol-Version': '2025-11-25',
    },
  });
}

async function sessionOf(url: string, token: string): Promise<string> {
  const response = await initialize(url, token);
  expect(response.status).toBe(200);
  await response.body?.cancel();
  return response.headers.get('mcp-session-id')!;
}

/** Asks again while the answer is 429 (a closed stream is let go as its socket closes). */
async function until200(ask: () => Promise<Response>): Promise<Response> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const response = await ask();
    if (response.status !== 429 || Date.now() > deadline) {
      expect(response.status).toBe(200);
      return response;
    }
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The final JSON-RPC message of an answer, SSE or JSON. */
async function readFinal(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream'))
    return JSON.parse(text);
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));
  return JSON.parse(data.at(-1)!);
}

describe('per-subject caps', () => {
  it('live sessions: past the cap initialize gets 429; DELETE frees one; another subject is not counted', async () => {
    const url = await setup({ maxSessionsPerSubject: 2 });
    const first = await sessionOf(url, ALICE);
    await sessionOf(url, ALICE);
    const third = await initialize(url, ALICE);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { message: string } }).error.message).toBe(
      'Too many live sessions for this subject (limit 2); end one (DELETE) or let one expire',
    );
    expect(third.headers.get('mcp-session-id')).toBeNull();
    await sessionOf(url, BOB);
    const ended = await fetch(url, {
      method: 'DELETE',
      headers: {
        Authorization: `Bearer ${ALICE}`,
        'Mcp-Session-Id': first,
        'MCP-Protocol-Version': '2025-11-25',
      },
    });
    expect(ended.status).toBe(200);
    await sessionOf(url, ALICE);
  });

  it('open streams of every kind count against one cap: session GETs, stateless responses, listens', async () => {
    const url = await setup({ maxStreamsPerSubject: 2 });
    const session = await sessionOf(url, ALICE);
    const controller = new AbortController();
    onTestFinished(() => controller.abort());
    const get = await listen(url, ALICE, session);
    expect(get.status).toBe(200);
    // A stateless call answered on an SSE stream, open for seconds.
    const long = (signal?: AbortSignal) =>
      rpcResponse(
        url,
        'tools/call',
        { name: 'count', arguments: { to: 100, delayMs: 50 } },
        { token: ALICE, tasks: false, ...(signal === undefined ? {} : { signal }) },
      );
    const counting = new AbortController();
    const stateless = await long(counting.signal);
    expect(stateless.status).toBe(200);
    // Two open: a third of any kind is refused, before anything is written.
    expect((await listen(url, ALICE, session)).status).toBe(429);
    const refusedCall = await long();
    expect(refusedCall.status).toBe(429);
    expect(((await refusedCall.json()) as { error: { message: string } }).error.message).toBe(
      'Too many open streams for this subject (limit 2); close one first',
    );
    const listenTo = (taskId: string) =>
      rpcResponse(
        url,
        'subscriptions/listen',
        { notifications: { taskIds: [taskId] } },
        { token: ALICE, signal: controller.signal },
      );
    expect((await listenTo('AAAAAAAAAAAAAAAAAAAAAA')).status).toBe(429);
    // An initialize answers on a stream of its own: counted too (security review L9).
    const initializing = await initialize(url, ALICE);
    expect(initializing.status).toBe(429);
    await initializing.body?.cancel();
    // Bob has streams of his own.
    const bobGet = await listen(url, BOB, await sessionOf(url, BOB));
    expect(bobGet.status).toBe(200);
    await bobGet.body?.cancel();
    // A closed stream gives its place back: a listen on a running task takes it, and counts.
    counting.abort();
    const task = await until200(() =>
      rpcResponse(
        url,
        'tools/call',
        { name: 'count', arguments: { to: 100, delayMs: 50 } },
        {
          token: ALICE,
        },
      ),
    );
    const taskId = String(
      ((await readFinal(task)) as { result: { taskId: string } }).result.taskId,
    );
    const listening = await until200(() => listenTo(taskId));
    expect(listening.headers.get('content-type')).toContain('text/event-stream');
    expect((await listen(url, ALICE, session)).status).toBe(429);
    await get.body?.cancel();
  });

  it('without authentication the share is the address, and loopback clients are exempt', async () => {
    const stack = await embeddedStack({
      partitions: 1,
      gateway: { maxSessionsPerSubject: 1, trustedProxies: ['loopback'] },
    });
    onTestFinished(() => stack.stop());
    const url = stack.gateways[0]!.url;
    const init = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, ...headers },
        body: JSON.stringify(initializeRequest()),
      });
    const statuses: number[] = [];
    for (const headers of [
      {},
      {},
      { 'X-Forwarded-For': '203.0.113.7' },
      { 'X-Forwarded-For': '203.0.113.7' },
      { 'X-Forwarded-For': '203.0.113.8' },
    ]) {
      const response = await init(headers);
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 429, 200]);
  });
});
