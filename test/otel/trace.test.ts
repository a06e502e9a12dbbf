import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { RawMcpClient } from '../support/sse.js';

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

const parentOf = (span: ReadableSpan, spans: ReadableSpan[]) =>
  spans.find((s) => s.spanContext().spanId === span.parentSpanContext?.spanId);

describe('traces across gateway, log and worker', () => {
  it('one tools/call is one trace: gateway request → produce → worker process → tool execution', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const client = new Client({ name: 'traced', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
    onTestFinished(() => client.close());
    exporter.reset();
    const result = await client.callTool({ name: 'count', arguments: { to: 3, delayMs: 0 } });
    expect(result.content).toEqual([{ type: 'text', text: '1,2,3' }]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const spans = exporter.getFinishedSpans();
    const tool = spans.find((s) => s.name === 'execute_tool count')!;
    expect(tool.attributes).toMatchObject({ 'gen_ai.tool.name': 'count', 'tidemark.attempt': 1 });
    const process = parentOf(tool, spans)!;
    expect(process.name).toBe('process tools/call');
    expect(process.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'mcp.method.name': 'tools/call',
      'messaging.destination.name': stack.topics.requests,
    });
    const produce = parentOf(process, spans)!;
    expect(produce.name).toBe(`send ${stack.topics.requests}`);
    const request = parentOf(produce, spans)!;
    expect(request.name).toBe('tools/call');
    expect(request.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'count',
    });
    expect(
      new Set([tool, process, produce, request].map((s) => s.spanContext().traceId)).size,
    ).toBe(1);
  });

  it('a resume is a span with its outcome and reason: resume, and invalid for a tampered id', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const { ids } = await client.callCount(1, 5, 10, 2);
    exporter.reset();
    await (await client.resume(ids.at(-1)!)).text();
    await (await client.resume(`${ids.at(-1)!.slice(0, -4)}AAAA`)).text();
    const resumes = exporter.getFinishedSpans().filter((s) => s.name === 'mcp.resume');
    expect(
      resumes.map((s) => [
        s.attributes['tidemark.resume.outcome'],
        s.attributes['tidemark.resume.reason'],
      ]),
    ).toEqual([
      ['resume', 'contiguous'],
      ['invalid', 'mac-mismatch'],
    ]);
    expect(resumes[0]!.attributes['tidemark.resume.claim_generation']).toMatch(/\.1$/);
  });
});
