import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { setSpansPerEvent } from '@tidemark/otel';
import { encodeEventId, verifyEventId, type SessionId } from '@tidemark/protocol';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack, type EmbeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';

// A real SDK in this test process, as an application would register it; Tidemark's packages only
// use the API.
const exporter = new InMemorySpanExporter();
beforeAll(() => {
  trace.setGlobalTracerProvider(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});

const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const parentOf = (span: ReadableSpan, spans: ReadableSpan[]) =>
  spans.find((s) => idOf(s) === span.parentSpanContext?.spanId);
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

/** Posts a tool call and reads its stream until `stopAfter` progress events; the ids seen. */
async function callUntil(
  client: RawMcpClient,
  id: number,
  name: string,
  args: Record<string, unknown>,
  stopAfter = Infinity,
): Promise<string[]> {
  const controller = new AbortController();
  const response = await client.post(
    {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name, arguments: args, _meta: { progressToken: `p${id}` } },
    },
    {},
    controller.signal,
  );
  const ids: string[] = [];
  let progress = 0;
  await readSse(
    response,
    (event) => {
      if (event.id !== undefined) ids.push(event.id);
      if (event.data.includes('notifications/progress') && ++progress >= stopAfter) return false;
    },
    controller,
  );
  return ids;
}

async function twoGateways(): Promise<EmbeddedStack> {
  const stack = await embeddedStack({ replicas: 2 });
  onTestFinished(() => stack.stop());
  return stack;
}

/** An official client's `count(3)` through the first gateway; the spans it left. */
async function tracedCount(stack: EmbeddedStack): Promise<ReadableSpan[]> {
  const client = new Client({ name: 'traced', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
  onTestFinished(() => client.close());
  exporter.reset();
  const progress: number[] = [];
  const result = await client.callTool(
    { name: 'count', arguments: { to: 3, delayMs: 0 } },
    { onprogress: (p) => progress.push(p.progress) },
  );
  expect(result.content).toEqual([{ type: 'text', text: '1,2,3' }]);
  expect(progress).toEqual([1, 2, 3]);
  await settle();
  return exporter.getFinishedSpans();
}

describe('traces across gateway, log and worker', () => {
  it('by default a call’s trace holds its milestones: the terminal record’s hops, and no span per event — which carries its trace context all the same', async () => {
    const stack = await twoGateways();
    const spans = await tracedCount(stack);
    const request = spans.find((s) => s.name === 'tools/call count')!;
    const traceId = request.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    expect(inTrace.filter((s) => s.name === 'sse write')).toHaveLength(1);
    expect(inTrace.filter((s) => s.name === `receive ${stack.topics.events}`)).toHaveLength(1);
    // One produce of `events`: the terminal record's, none for the three progress events.
    expect(inTrace.filter((s) => s.name === `send ${stack.topics.events}`)).toHaveLength(1);
    const tool = inTrace.find((s) => s.name === 'execute_tool count')!;
    const progressRecords = (await stack.log.fetch(stack.topics.events, 0, 0n)).records
      .concat((await stack.log.fetch(stack.topics.events, 1, 0n)).records)
      .filter(
        (r) =>
          r.value !== null && Buffer.from(r.value).toString().includes('notifications/progress'),
      );
    expect(progressRecords).toHaveLength(3);
    for (const record of progressRecords)
      expect(record.headers.find(([name]) => name === 'traceparent')?.[1]).toContain(
        `${traceId}-${tool.spanContext().spanId}`,
      );
  });

  it('with --trace-events, one tools/call is one trace: request → produce → process → tool → produce → receive → sse write, for every event', async () => {
    setSpansPerEvent(true);
    onTestFinished(() => setSpansPerEvent(false));
    const stack = await twoGateways();
    const spans = await tracedCount(stack);
    const request = spans.find((s) => s.name === 'tools/call count')!;
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(request.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'count',
      'jsonrpc.request.id': expect.any(String) as unknown,
      'mcp.session.id': expect.any(String) as unknown,
    });
    const trail = (span: ReadableSpan) => {
      const names = [span.name];
      for (let at = parentOf(span, spans); at !== undefined; at = parentOf(at, spans))
        names.unshift(at.name);
      return names;
    };
    // Each message's way back, up to the client's request: a progress event the tool sent, and
    // the result, which the server sends when the tool has returned.
    const writes = spans.filter((s) => s.name === 'sse write');
    expect(writes).toHaveLength(4);
    const [toolSide, answer] = [
      writes.filter((w) => trail(w).includes('execute_tool count')),
      writes.filter((w) => !trail(w).includes('execute_tool count')),
    ];
    expect(toolSide).toHaveLength(3);
    expect(trail(toolSide[0]!)).toEqual([
      'tools/call count',
      `send ${stack.topics.requests}`,
      'process tools/call',
      'execute_tool count',
      `send ${stack.topics.events}`,
      `receive ${stack.topics.events}`,
      'sse write',
    ]);
    expect(trail(answer[0]!)).toEqual([
      'tools/call count',
      `send ${stack.topics.requests}`,
      'process tools/call',
      `send ${stack.topics.events}`,
      `receive ${stack.topics.events}`,
      'sse write',
    ]);
    const resultWrite = toolSide[0]!;
    const receive = parentOf(resultWrite, spans)!;
    expect(receive.kind).toBe(SpanKind.CONSUMER);
    expect(receive.attributes).toMatchObject({
      'messaging.system': 'embedded', // the log in use names itself (LogPort.kind)
      'messaging.operation.type': 'receive',
      'messaging.destination.name': stack.topics.events,
      'messaging.kafka.offset': expect.any(Number) as unknown,
    });
    const produced = parentOf(receive, spans)!;
    expect(produced.kind).toBe(SpanKind.PRODUCER);
    expect(produced.attributes['messaging.kafka.offset']).toBe(
      receive.attributes['messaging.kafka.offset'],
    );
    const tool = parentOf(produced, spans)!;
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'count', 'tidemark.attempt': 1 });
    const process = parentOf(tool, spans)!;
    expect(process.attributes).toMatchObject({
      'messaging.system': 'embedded', // the log in use names itself (LogPort.kind)
      'mcp.method.name': 'tools/call',
      'messaging.destination.name': stack.topics.requests,
    });
    expect(
      new Set(
        spans.filter((s) => trail(s)[0] === 'tools/call count').map((s) => s.spanContext().traceId),
      ).size,
    ).toBe(1);
  });

  it("a client's traceparent in _meta is continued into the server and the tool", async () => {
    const stack = await twoGateways();
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    exporter.reset();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const controller = new AbortController();
    const response = await client.post(
      {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: {
          name: 'count',
          arguments: { to: 2, delayMs: 0 },
          _meta: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
        },
      },
      {},
      controller.signal,
    );
    await response.text();
    await settle();
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'tools/call count')!;
    expect(request.spanContext().traceId).toBe(traceId);
    expect(request.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(spans.find((s) => s.name === 'execute_tool count')!.spanContext().traceId).toBe(traceId);
  });

  it('a resume on another gateway continues the call’s trace: resume, reset and invalid', async () => {
    const stack = await twoGateways();
    const [first, second] = [stack.gateways[0]!.url, stack.gateways[1]!.url];
    const client = new RawMcpClient(first);
    await client.initialize();
    exporter.reset();
    const ids = await callUntil(client, 1, 'count', { to: 5, delayMs: 10 }, 2);
    // A flaky call: attempt 1 stops at 2, attempt 2 (a new generation) runs to the end.
    const flakyIds = await callUntil(
      client,
      2,
      'flaky_count',
      { to: 3, delayMs: 50, failAt: 2, failAttempts: 1 },
      1,
    );
    await settle();
    const traceOf = (name: string) =>
      exporter
        .getFinishedSpans()
        .find((s) => s.name === name)!
        .spanContext().traceId;
    const countTrace = traceOf('tools/call count');
    const flakyTrace = traceOf('tools/call flaky_count');

    const onSecond = new RawMcpClient(second, client.session);
    const claim = verifyEventId(ids.at(-1)!, {
      session: client.session as SessionId,
      keyring: stack.keyring,
      nowMs: Date.now(),
    });
    if (!claim.ok) throw new Error('the id the gateway minted does not verify');
    const beyond = encodeEventId(
      {
        logIdentity: await stack.log.identity(stack.topics.events),
        partition: claim.claim.partition,
        offset: 1_000_000n,
        generation: claim.claim.generation,
        seq: claim.claim.seq + 100,
        stream: claim.claim.stream,
      },
      client.session as SessionId,
      stack.keyring,
    );
    exporter.reset();
    await (await onSecond.resume(ids.at(-1)!)).text();
    await (await onSecond.resume(flakyIds.at(-1)!)).text();
    expect((await onSecond.resume(beyond)).status).toBe(400);
    expect((await onSecond.resume(`${ids.at(-1)!.slice(0, -4)}AAAA`)).status).toBe(400);
    await settle();
    const resumes = exporter.getFinishedSpans().filter((s) => s.name === 'mcp.resume');
    expect(
      resumes.map((s) => [
        s.attributes['tidemark.resume.outcome'],
        s.attributes['tidemark.resume.reason'],
        s.spanContext().traceId,
      ]),
    ).toEqual([
      ['resume', 'contiguous', countTrace],
      ['reset', expect.any(String), flakyTrace],
      ['invalid', 'beyond-tail', countTrace],
      // A tampered id names nothing that can be trusted: its span starts a trace of its own.
      [
        'invalid',
        'mac-mismatch',
        expect.not.stringMatching(new RegExp(`${countTrace}|${flakyTrace}`)),
      ],
    ]);
    expect(resumes[0]!.attributes['tidemark.resume.claim_generation']).toMatch(/\.1$/);
    expect(resumes[1]!.attributes).toMatchObject({
      'tidemark.resume.claim_generation': expect.stringMatching(/\.1$/) as unknown,
      'tidemark.generation': expect.stringMatching(/\.2$/) as unknown,
    });
    expect(resumes[1]!.events.map((e) => e.name)).toContain('tidemark.reset');
    expect(resumes[2]!.status.code).toBe(2);
    // The replayed events of the resumed stream are delivered in the call's trace too.
    const replayed = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'sse write' && s.spanContext().traceId === countTrace);
    expect(replayed.length).toBeGreaterThanOrEqual(1);
  });
});
