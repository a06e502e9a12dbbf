import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { runs } from '@tidemark/fixtures/runs';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';

// Fuzzing the gateway's front door: random and mutated Last-Event-ID, Mcp-Session-Id, JSON-RPC
// bodies and headers. The gateway must answer every one without a 5xx, stay up, and never hand
// one session's events to a request of another.

const SECRET_TOKEN = 'victim-progress-token-3f9a';
const FUZZ_RUNS = runs(1000);

/** A string with a few characters changed, dropped or duplicated. */
const mutated = (base: string) =>
  fc
    .array(
      fc.tuple(
        fc.nat({ max: Math.max(0, base.length - 1) }),
        fc.constantFrom('flip', 'drop', 'dup', 'swap'),
      ),
      {
        minLength: 1,
        maxLength: 4,
      },
    )
    .map((edits) => {
      let s = base;
      for (const [at, edit] of edits) {
        const i = Math.min(at, Math.max(0, s.length - 1));
        const c = s[i] ?? 'A';
        if (edit === 'flip') s = `${s.slice(0, i)}${c === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
        if (edit === 'drop') s = s.slice(0, i) + s.slice(i + 1);
        if (edit === 'dup') s = s.slice(0, i) + c + s.slice(i);
        if (edit === 'swap' && i + 1 < s.length) s = s.slice(0, i) + s[i + 1]! + c + s.slice(i + 2);
      }
      return s;
    });

describe('fuzz: the gateway front door', () => {
  it('random and mutated requests: no 5xx, no crash, no data from another session', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const url = stack.gateways[0]!.url;
    // The victim: a session whose stream carries a token nobody else can know.
    const victim = new RawMcpClient(url);
    await victim.initialize();
    const response = await victim.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 3 }, _meta: { progressToken: SECRET_TOKEN } },
    });
    const victimIds: string[] = [];
    await readSse(response, (event) => void (event.id !== undefined && victimIds.push(event.id)));
    // The attacker: a session of its own.
    const attacker = new RawMcpClient(url);
    await attacker.initialize();

    const validBody = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 2 } },
    };
    const json = fc.jsonValue({ maxDepth: 3 });
    const body = fc.oneof(
      json.map((v) => JSON.stringify(v)),
      mutated(JSON.stringify(validBody)),
      fc.string({ maxLength: 200 }),
      fc
        .record({
          jsonrpc: fc.constantFrom('2.0', '1.0', 2),
          id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), json),
          method: fc.oneof(
            fc.constantFrom('tools/call', 'tools/list', 'initialize', 'ping', 'resources/read', ''),
            fc.string({ maxLength: 30 }),
          ),
          params: json,
        })
        .map((v) => JSON.stringify(v)),
    );
    const sessionId = fc.oneof(
      fc.constant(attacker.session),
      fc.constant(victim.session),
      mutated(victim.session),
      fc.string({ maxLength: 80 }),
      fc.constant(undefined),
    );
    const lastEventId = fc.oneof(
      fc.constantFrom(...victimIds),
      ...victimIds.map(mutated),
      fc.string({ maxLength: 120 }),
      fc.constant(undefined),
    );
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH'),
      session: sessionId,
      lastEventId,
      body,
      accept: fc.constantFrom(
        'application/json, text/event-stream',
        'text/event-stream',
        'application/json',
        '*/*',
        'text/html',
      ),
      contentType: fc.constantFrom(
        'application/json',
        'text/plain',
        'application/json; charset=utf-8',
      ),
      version: fc.constantFrom(
        '2025-11-25',
        '2025-06-18',
        '2025-03-26',
        '2026-07-28',
        '1999-01-01',
        'garbage',
      ),
    });

    // The oracle can see a leak: the victim's own resume does carry its token.
    expect(await (await victim.resume(victimIds[0]!)).text()).toContain(SECRET_TOKEN);

    let requests = 0;
    const unfinished: string[] = [];
    let keptOpen = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        requests++;
        const headers: Record<string, string> = {
          Accept: r.accept,
          'Content-Type': r.contentType,
          'MCP-Protocol-Version': r.version,
        };
        if (r.session !== undefined) headers['Mcp-Session-Id'] = r.session;
        if (r.lastEventId !== undefined) headers['Last-Event-ID'] = r.lastEventId;
        // A healthy gateway answers every request's headers at once; the body of an SSE answer may
        // stay open (a standalone stream, a resume of a live call), so it is read for 400 ms only.
        // A request with no headers in 10 s is a gateway that hangs on this input: the property
        // fails at once (no shrinking: each try would wait again); a JSON body that never ends is
        // counted, and none is allowed.
        const controller = new AbortController();
        let timer = setTimeout(() => controller.abort(), 10_000);
        let status = 0;
        let text = '';
        let type = '';
        try {
          const res = await fetch(url, {
            method: r.method,
            headers,
            ...(r.method === 'GET' || r.method === 'DELETE' ? {} : { body: r.body }),
            signal: controller.signal,
          });
          status = res.status;
          type = res.headers.get('content-type') ?? '';
          clearTimeout(timer);
          timer = setTimeout(() => controller.abort(), 400);
          // Chunk by chunk, so a stream cut at 400 ms keeps what it carried for the leak check:
          // the streams kept open (resumes of live calls) are where a leaked event would be.
          const decoder = new TextDecoder();
          if (res.body !== null)
            for await (const chunk of res.body as AsyncIterable<Uint8Array>)
              text += decoder.decode(chunk, { stream: true });
        } catch (error) {
          if (!controller.signal.aborted) throw error; // a refused connection is a failure
          if (status === 0)
            throw new Error(`no answer in 10 s: ${JSON.stringify(r).slice(0, 300)}`, {
              cause: error,
            });
          if (!type.startsWith('text/event-stream'))
            unfinished.push(`${r.method} → ${status} ${type}: ${JSON.stringify(r).slice(0, 300)}`);
          else keptOpen++;
        } finally {
          clearTimeout(timer);
        }
        expect(status, `${r.method} → ${status} ${text.slice(0, 200)}`).toBeLessThan(500);
        if (r.session !== victim.session) expect(text).not.toContain(SECRET_TOKEN);
      }),
      { numRuns: FUZZ_RUNS, seed: 42, endOnFailure: true },
    );
    expect(requests).toBe(FUZZ_RUNS);
    expect(unfinished).toEqual([]);
    // Some of the requests are well-formed GETs and resumes whose stream stays open — not most.
    expect(keptOpen).toBeLessThan(50);

    // Still serving: a fresh session calls a tool and gets the exact answer.
    const after = new RawMcpClient(url);
    await after.initialize();
    const { messages } = await after.callCount(9, 3, 0);
    expect(JSON.stringify(messages.at(-1))).toContain('1,2,3');
  }, 120_000);
});
