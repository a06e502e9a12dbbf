import { tokenFileAuthenticator } from '@tidemark/gateway';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { initializeRequest, MCP_HEADERS, readSse } from '@tidemark/fixtures/sse';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';

// "Authentication on every lane, before anything is logged": every way in — the session lane's
// POST, its standalone GET stream, a resume with Last-Event-ID, DELETE, and the Tasks lane's
// tasks/get, tasks/update, tasks/cancel and subscriptions/listen — refuses a request without a
// known token with 401 and writes nothing to the log; a known token of another subject is told
// 404, as if the session did not exist, and changes nothing for its owner.

const ALICE = 'alice-token-0123456789';
const BOB = 'bobby-token-0123456789';

async function setup() {
  const stack = await embeddedStack({
    partitions: 1,
    gateway: { authenticate: tokenFileAuthenticator(`${ALICE} alice\n${BOB} bob\n`) },
  });
  onTestFinished(() => stack.stop());
  // The end of every topic a gateway writes (one partition each): whatever a gateway accepts goes
  // to `requests` first, a session's record to `sessions`. (The worker's own writes — a finished
  // call's head in `streams` — may land a moment after its result and are not the gateway's.)
  const logEnd = async () => {
    const ends: string[] = [];
    for (const topic of [stack.topics.requests, stack.topics.sessions])
      ends.push(`${topic}@${(await stack.log.offsets(topic, 0)).highWatermark}`);
    return ends;
  };
  return { url: stack.gateways[0]!.url, logEnd };
}

const bearer = (token: string | undefined): Record<string, string> =>
  token === undefined ? {} : { Authorization: `Bearer ${token}` };

/** Alice's session with one finished call: its id and the last event id she was sent. */
async function aliceSession(url: string): Promise<{ session: string; lastEventId: string }> {
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...bearer(ALICE) },
    body: JSON.stringify(initializeRequest()),
  });
  const session = init.headers.get('mcp-session-id')!;
  await readSse(init, (e) => (e.data === '' ? undefined : false));
  const inSession = {
    ...MCP_HEADERS,
    ...bearer(ALICE),
    'Mcp-Session-Id': session,
    'MCP-Protocol-Version': '2025-11-25',
  };
  await fetch(url, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  const call = await fetch(url, {
    method: 'POST',
    headers: inSession,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 2 }, _meta: { progressToken: 'p' } },
    }),
  });
  let lastEventId = '';
  await readSse(call, (e) => {
    if (e.id !== undefined && e.id !== '') lastEventId = e.id;
    return e.data.includes('"result"') ? false : undefined;
  });
  expect(lastEventId).not.toBe('');
  return { session, lastEventId };
}

/** The session lane's three verbs on Alice's session, as `token` sends them: the statuses. */
async function sessionLane(
  url: string,
  session: string,
  lastEventId: string,
  token: string | undefined,
): Promise<Record<string, number>> {
  const headers = {
    ...bearer(token),
    'Mcp-Session-Id': session,
    'MCP-Protocol-Version': '2025-11-25',
  };
  const status = async (init: RequestInit) => {
    const response = await fetch(url, init);
    await response.body?.cancel();
    return response.status;
  };
  const stream = { Accept: 'text/event-stream', ...headers };
  return {
    post: await status({
      method: 'POST',
      headers: { ...MCP_HEADERS, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    }),
    standaloneGet: await status({ method: 'GET', headers: stream }),
    resume: await status({ method: 'GET', headers: { ...stream, 'Last-Event-ID': lastEventId } }),
    delete: await status({ method: 'DELETE', headers }),
  };
}

/** The Tasks lane's requests about Alice's task, as `token` sends them: the HTTP statuses. */
async function taskLane(url: string, taskId: string, token: string | undefined) {
  const options = token === undefined ? {} : { token };
  const statuses: Record<string, number> = {};
  for (const [method, params] of [
    ['tasks/get', { taskId }],
    ['tasks/update', { taskId, inputResponses: {} }],
    ['tasks/cancel', { taskId }],
    ['subscriptions/listen', { notifications: { taskIds: [taskId] } }],
  ] as const)
    statuses[method] = (await rpc(url, method, params, options)).status;
  return statuses;
}

describe('authentication on every lane', () => {
  it('no token or an unknown one → 401 on every verb of both lanes, and nothing is logged', async () => {
    const { url, logEnd } = await setup();
    const { session, lastEventId } = await aliceSession(url);
    const created = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2 } },
      {
        token: ALICE,
      },
    );
    const taskId = String(created.body.result?.['taskId']);
    await pollTask([url], taskId, ['completed'], { token: ALICE });
    const before = await logEnd();
    for (const token of [undefined, 'unknown-token-0123456789']) {
      expect(await sessionLane(url, session, lastEventId, token), `token ${token}`).toEqual({
        post: 401,
        standaloneGet: 401,
        resume: 401,
        delete: 401,
      });
      expect(await taskLane(url, taskId, token), `token ${token}`).toEqual({
        'tasks/get': 401,
        'tasks/update': 401,
        'tasks/cancel': 401,
        'subscriptions/listen': 401,
      });
    }
    expect(await logEnd()).toEqual(before);
  });

  it("another subject's known token → 404 on Alice's session (POST, GET, resume, DELETE), which lives on", async () => {
    const { url, logEnd } = await setup();
    const { session, lastEventId } = await aliceSession(url);
    const before = await logEnd();
    expect(await sessionLane(url, session, lastEventId, BOB)).toEqual({
      post: 404,
      standaloneGet: 404,
      resume: 404,
      delete: 404,
    });
    expect(await logEnd()).toEqual(before);
    // Bob's DELETE ended nothing: Alice's session still answers her.
    const list = await fetch(url, {
      method: 'POST',
      headers: {
        ...MCP_HEADERS,
        ...bearer(ALICE),
        'Mcp-Session-Id': session,
        'MCP-Protocol-Version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }),
    });
    expect(list.status).toBe(200);
    await list.body?.cancel();
  });
});
