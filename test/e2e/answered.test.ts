import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { runs } from '@tidemark/fixtures/runs';
import { MCP_HEADERS, MODERN_META, RawMcpClient, readSse } from '@tidemark/fixtures/sse';

// The invariant of issue #16, as a property over 100,000 generated messages thrown at a real
// gateway and worker on both lanes: every request the gateway accepts is answered — a result or a
// JSON-RPC error — within a bound, and the process keeps serving. Before the strict inbound check,
// a request the worker's SDK dropped held a call slot forever; 64 of them stopped every client.

const RUNS = runs(100_000);
const CONCURRENCY = 64;
const ANSWER_WITHIN_MS = 15_000;

/** Valid messages to start from; ids are filled in per run. */
const TEMPLATES: Array<Record<string, unknown>> = [
  { jsonrpc: '2.0', method: 'tools/list' },
  { jsonrpc: '2.0', method: 'ping' },
  { jsonrpc: '2.0', method: 'tools/call', params: { name: 'count', arguments: { to: 2 } } },
  { jsonrpc: '2.0', method: 'tools/call', params: { name: 'nope', arguments: {} } },
  { jsonrpc: '2.0', method: 'resources/list' },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
  { jsonrpc: '2.0', result: {} },
];

/** A structural mutation: what a buggy or hostile client does to a valid message. */
const mutation = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'none' as const }) },
  fc.record({ kind: fc.constant('extra' as const), key: fc.string({ maxLength: 8 }) }),
  fc.record({
    kind: fc.constant('id' as const),
    id: fc.oneof(
      fc.double(),
      fc.constant(2 ** 60),
      fc.constant(null),
      fc.boolean(),
      fc.array(fc.integer(), { maxLength: 2 }),
      fc.string({ maxLength: 300 }),
    ),
  }),
  fc.record({
    kind: fc.constant('params' as const),
    params: fc.oneof(fc.string(), fc.array(fc.nat()), fc.integer(), fc.constant(null)),
  }),
  fc.record({
    kind: fc.constant('drop' as const),
    key: fc.constantFrom('jsonrpc', 'method', 'params', 'id'),
  }),
  fc.record({
    kind: fc.constant('method' as const),
    method: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('initialize', 'tools/call')),
  }),
  fc.constant({ kind: 'error' as const }),
  fc.record({ kind: fc.constant('deep' as const), depth: fc.integer({ min: 60, max: 200 }) }),
);

const message = fc.record({
  template: fc.nat({ max: TEMPLATES.length - 1 }),
  modern: fc.boolean(),
  mutation,
});

type Generated = typeof message extends fc.Arbitrary<infer T> ? T : never;

function build(generated: Generated, id: number): Record<string, unknown> {
  const m: Record<string, unknown> = structuredClone(TEMPLATES[generated.template]!);
  if ('method' in m && !String(m['method']).startsWith('notifications/')) m['id'] = id;
  if ('result' in m) m['id'] = id;
  if (generated.modern && 'method' in m) {
    const params = (m['params'] as Record<string, unknown> | undefined) ?? {};
    m['params'] = { ...params, _meta: MODERN_META };
  }
  const mut = generated.mutation;
  if (mut.kind === 'extra') m[mut.key === '' ? 'x' : mut.key] = 1;
  if (mut.kind === 'id') m['id'] = mut.id;
  if (mut.kind === 'params') m['params'] = mut.params;
  if (mut.kind === 'drop') delete m[mut.key];
  if (mut.kind === 'method') m['method'] = mut.method;
  if (mut.kind === 'error') m['error'] = { code: 1, message: 'x' };
  if (mut.kind === 'deep') {
    let nested: unknown = 1;
    for (let i = 0; i < mut.depth; i++) nested = { a: nested };
    m['params'] = { nested, ...(generated.modern ? { _meta: MODERN_META } : {}) };
  }
  return m;
}

describe('every accepted request is answered (property, 100,000 messages, both lanes)', () => {
  it('generated and mutated JSON-RPC: a result or an error for each accepted request, in time; the process keeps serving', async () => {
    const stack = await embeddedStack({ partitions: 2 });
    onTestFinished(() => stack.stop());
    const url = stack.gateways[0]!.url;
    const legacy = new RawMcpClient(url);
    await legacy.initialize();
    const samples = fc.sample(message, { numRuns: RUNS, seed: 16 });
    const outcomes = { accepted: 0, answered: 0, refused: 0, notifications: 0 };
    const failures: string[] = [];
    let next = 0;
    let id = 1_000;

    async function one(generated: Generated): Promise<void> {
      const body = build(generated, ++id);
      const headers: Record<string, string> = generated.modern
        ? { ...MCP_HEADERS, 'MCP-Protocol-Version': '2026-07-28' }
        : {
            ...MCP_HEADERS,
            'Mcp-Session-Id': legacy.session,
            'MCP-Protocol-Version': '2025-11-25',
          };
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ANSWER_WITHIN_MS);
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: controller.signal,
        });
        if (response.status >= 500) {
          failures.push(`${response.status} for ${JSON.stringify(body).slice(0, 200)}`);
        }
        if (response.status === 202) {
          outcomes.notifications++;
          return;
        }
        if (response.status !== 200) {
          outcomes.refused++;
          await response.body?.cancel();
          return;
        }
        outcomes.accepted++;
        const wanted = body['id'];
        let answered = false;
        if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
          await readSse(
            response,
            (event) => {
              if (event.data === '') return;
              const m = JSON.parse(event.data) as Record<string, unknown>;
              if (m['id'] === wanted && ('result' in m || 'error' in m)) {
                answered = true;
                return false;
              }
            },
            controller,
          );
        } else {
          const m = (await response.json()) as Record<string, unknown>;
          answered = m['id'] === wanted && ('result' in m || 'error' in m);
        }
        if (answered) outcomes.answered++;
        else failures.push(`no answer in ${ANSWER_WITHIN_MS} ms: ${JSON.stringify(body)}`);
      } finally {
        clearTimeout(timer);
      }
    }

    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < samples.length) await one(samples[next++]!);
      }),
    );
    process.stdout.write(`answered-invariant: ${JSON.stringify(outcomes)}\n`);
    expect(failures.slice(0, 8)).toEqual([]);
    expect(outcomes.accepted + outcomes.refused + outcomes.notifications).toBe(RUNS);
    expect(outcomes.answered).toBe(outcomes.accepted);
    expect(outcomes.accepted).toBeGreaterThan(RUNS / 10); // the generator reaches the tools

    // Still serving: a fresh session gets its exact answer.
    const after = new RawMcpClient(url);
    await after.initialize();
    const { messages } = await after.callCount(9, 3, 0);
    expect(messages.at(-1)).toMatchObject({ id: 9, result: { content: [{ text: '1,2,3' }] } });
  }, 600_000);
});
