// Session expiry and result retention, end to end through a gateway and a worker: the same tests
// on the embedded log and on Kafka.
import { SessionStore, StreamHeadStore } from '@tidemark/log';
import {
  headKeyOfStep,
  requestStreamId,
  type LogPort,
  type SessionId,
  type TopicNames,
} from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';
import { MCP_HEADERS, MODERN_META, RawMcpClient, readSse } from '@tidemark/fixtures/sse';

export interface ExpiryStack {
  readonly url: string;
  readonly log: LogPort;
  readonly topics: TopicNames;
  readonly partitions: number;
}

export interface Ttls {
  readonly sessionTtlMs: number;
  readonly resultTtlMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const toolsList = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });

/** The event ids and messages of a finished `count` call. */
async function finishedCall(client: RawMcpClient, id: number) {
  const call = await client.callCount(id, 3, 0);
  expect(call.messages.some((m) => 'result' in m)).toBe(true);
  return call;
}

export function describeExpiry(
  name: string,
  start: (ttls: Ttls) => Promise<ExpiryStack>,
  /** Deletes every event of every partition (what retention does after the resume window). */
  expireEvents: (stack: ExpiryStack) => Promise<void>,
): void {
  describe(`expiry (${name})`, () => {
    it('an idle session expires everywhere: its record and heads are tombstoned, its next request gets 404, and a new initialize works', async () => {
      // A TTL with room: each use comes well within it even on a loaded machine.
      const stack = await start({ sessionTtlMs: 3_000, resultTtlMs: 60_000 });
      const client = new RawMcpClient(stack.url);
      await client.initialize();
      await finishedCall(client, 1);
      const session = client.session as SessionId;
      const stores = { port: stack.log, topics: stack.topics, partitionCount: stack.partitions };
      const heads = new StreamHeadStore(stores);
      expect(await heads.get(session, requestStreamId(1))).toBeDefined();

      // Used within the TTL, it stays (past the TTL in all, used every third of it).
      await sleep(1_000);
      expect((await client.post(toolsList(2))).status).toBe(200);
      await sleep(1_000);
      expect((await client.post(toolsList(3))).status).toBe(200);
      await sleep(1_000);
      expect((await client.post(toolsList(4))).status).toBe(200);

      // Left idle, it expires: 404, as the spec says of an ended session.
      const started = Date.now();
      const answer = await eventually(
        () => client.post(toolsList(5)),
        (response) => response.status === 404,
        30_000,
        'the idle session to expire',
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      expect(((await answer.json()) as { error: { code: number } }).error.code).toBe(-32001);
      expect(await new SessionStore(stores).get(session)).toBeUndefined();
      expect(await heads.get(session, requestStreamId(1))).toBeUndefined();
      expect(await heads.get(session, requestStreamId(2))).toBeUndefined();

      // The client re-initializes and goes on.
      const again = new RawMcpClient(stack.url);
      await again.initialize();
      expect(again.session).not.toBe(session);
      await finishedCall(again, 1);
    });

    it('an open stream keeps a session that only listens alive past its TTL; closed, the session expires — a call it left running with nobody listening too (security review H2)', async () => {
      const stack = await start({ sessionTtlMs: 1_500, resultTtlMs: 60_000 });
      const client = new RawMcpClient(stack.url);
      await client.initialize();
      const listening = new AbortController();
      const standalone = await fetch(stack.url, {
        headers: {
          Accept: 'text/event-stream',
          'Mcp-Session-Id': client.session,
          'MCP-Protocol-Version': '2025-11-25',
        },
        signal: listening.signal,
      });
      expect(standalone.status).toBe(200);
      const reading = readSse(standalone, () => undefined, listening).catch(() => undefined);
      await sleep(4_000);
      expect((await client.post(toolsList(2))).status).toBe(200);
      // A call of 100 s left running, its stream dropped after its first progress: it holds the
      // session only while someone listens.
      await client.callCount(5, 1_000, 100, 1);
      listening.abort();
      await reading;
      await eventually(
        () => client.post(toolsList(3)),
        (response) => response.status === 404,
        30_000,
        'the session to expire once nothing holds it',
      );
    });

    it('a finished result is kept for the result TTL, then tombstoned: a resume gets the result, later an explicit 400, never an empty stream', async () => {
      const stack = await start({ sessionTtlMs: 60_000, resultTtlMs: 6_000 });
      const client = new RawMcpClient(stack.url);
      await client.initialize();
      const { ids } = await finishedCall(client, 1);
      const progressId = ids.find((id) => id !== ids[0])!;
      await expireEvents(stack);

      // Within the result TTL: the events are gone, the head still has the final result.
      const early = await client.resume(progressId);
      expect(early.status).toBe(200);
      const replayed: Array<Record<string, unknown>> = [];
      await readSse(early, (event) => {
        if (event.data !== '') replayed.push(JSON.parse(event.data) as Record<string, unknown>);
      });
      expect(replayed[0]).toMatchObject({
        method: 'notifications/tidemark/reset',
        params: { reason: 'terminal-evicted' },
      });
      expect(replayed.at(-1)).toMatchObject({ id: 1, result: {} });

      // Past it: the head is tombstoned, and the resume is refused with a reason.
      const late = await eventually(
        () => client.resume(progressId),
        (response) => response.status !== 200,
        30_000,
        'the result to expire',
      );
      expect(late.status).toBe(400);
      expect(await late.json()).toMatchObject({ error: { data: { reason: 'unknown-stream' } } });
      // The session itself lives on.
      expect((await client.post(toolsList(2))).status).toBe(200);
    });

    it('a call’s journaled steps go with it: kept while its result is, tombstoned after the result TTL (session and stateless lanes)', async () => {
      const stack = await start({ sessionTtlMs: 60_000, resultTtlMs: 4_000 });
      const client = new RawMcpClient(stack.url);
      await client.initialize();
      const pay = { name: 'pay', arguments: { to: 'ada@example.com', amountCents: 1 } };
      const session = await client.post({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: pay,
      });
      const stateless = await fetch(stack.url, {
        method: 'POST',
        headers: { ...MCP_HEADERS, 'MCP-Protocol-Version': '2026-07-28' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { ...pay, _meta: MODERN_META },
        }),
      });
      for (const response of [session, stateless]) {
        const messages: Array<Record<string, unknown>> = [];
        await readSse(response, (event) => {
          if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
        });
        expect(messages.at(-1)).toMatchObject({ result: { structuredContent: {} } });
      }
      const heads = new StreamHeadStore({
        port: stack.log,
        topics: stack.topics,
        partitionCount: stack.partitions,
      });
      const stepKeys = async () => {
        const keys: string[] = [];
        for (let p = 0; p < stack.partitions; p++) {
          await heads.catchUp(p);
          for (const [key] of heads.entries(p))
            if (headKeyOfStep(key) !== undefined) keys.push(key);
        }
        return keys;
      };
      // Two steps (charge, receipt) of each call.
      expect(await stepKeys()).toHaveLength(4);
      await eventually(stepKeys, (keys) => keys.length === 0, 30_000, 'the steps to go');
      expect(await heads.get(client.session as SessionId, requestStreamId(1))).toBeUndefined();
    });

    it('the stateless lane (2026-07-28) leaves no per-request state behind', async () => {
      const stack = await start({ sessionTtlMs: 60_000, resultTtlMs: 60_000 });
      for (let i = 0; i < 5; i++) {
        const response = await fetch(stack.url, {
          method: 'POST',
          headers: { ...MCP_HEADERS, 'MCP-Protocol-Version': '2026-07-28' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'tools/call',
            params: { name: 'count', arguments: { to: 2, delayMs: 0 }, _meta: MODERN_META },
          }),
        });
        expect(response.status).toBe(200);
        const messages: Array<Record<string, unknown>> = [];
        await readSse(response, (event) => {
          if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
        });
        expect(messages.at(-1)).toMatchObject({ id: i, result: {} });
      }
      const liveHeads = async () => {
        const heads = new StreamHeadStore({
          port: stack.log,
          topics: stack.topics,
          partitionCount: stack.partitions,
        });
        let count = 0;
        for (let p = 0; p < stack.partitions; p++) {
          await heads.catchUp(p);
          count += [...heads.entries(p)].length;
        }
        return count;
      };
      await eventually(liveHeads, (count) => count === 0, 15_000, 'the stateless heads to go');
    });
  });
}
