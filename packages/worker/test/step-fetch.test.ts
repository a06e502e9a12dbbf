import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, SpanKind, trace, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { StepRecord } from '@tidemark/log';
import { FetchStatusError } from '@tidemark/tools';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { retryAfterOf, stepFetch } from '../src/execution/step-fetch.js';
import { memorySteps } from './memory-steps.js';

// `Execution.fetch` against a pretend service on 127.0.0.1: inside a step it sends the step's
// effect key as Idempotency-Key on every try, the call's trace context along, a client span per
// request, and a response asking to be tried again is thrown for the step's retry policy — which
// waits what its Retry-After says.

const exporter = new InMemorySpanExporter();
/** Just enough of W3C trace context for the test to see what was sent. */
const traceparent: TextMapPropagator = {
  inject: (ctx, carrier, setter) => {
    const span = trace.getSpanContext(ctx);
    if (span !== undefined)
      setter.set(carrier, 'traceparent', `00-${span.traceId}-${span.spanId}-01`);
  },
  extract: (ctx) => ctx,
  fields: () => ['traceparent'],
};
beforeAll(() => {
  trace.setGlobalTracerProvider(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(traceparent);
});

/** A service that answers each request with the next of `answers`, and keeps their headers. */
async function service(
  answers: Array<{ status: number; headers?: Record<string, string>; body?: string }>,
) {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    const answer = answers[Math.min(seen.length, answers.length) - 1]!;
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    res.end(answer.body ?? '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => void server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function steps() {
  const waits: number[] = [];
  const journal = new Map<string, StepRecord>();
  const callSteps = memorySteps(journal, {
    callId: 's/9',
    replay: false,
    sleep: (ms) => Promise.resolve(void waits.push(ms)),
  });
  return { step: callSteps.forExecution('e.1').step, waits };
}

describe('Execution.fetch', () => {
  it('in a step: one Idempotency-Key for every try, Retry-After waited, each request a client span of the call', async () => {
    const { url, seen } = await service([
      { status: 503, headers: { 'retry-after': '2' } },
      { status: 201, body: '{"id":"em_1"}' },
    ]);
    const { step, waits } = steps();
    exporter.reset();
    const tracer = trace.getTracer('test');
    let effectKey = '';
    const result = await tracer.startActiveSpan('tool', async (span) => {
      try {
        return await step(
          'receipt',
          async (context) => {
            effectKey = context.effectKey;
            const response = await stepFetch(`${url}/receipts?token=secret`, {
              method: 'POST',
              body: '{}',
            });
            return await response.json();
          },
          { retry: { maxAttempts: 3, initialDelayMs: 10 } },
        );
      } finally {
        span.end();
      }
    });
    expect(result).toEqual({ id: 'em_1' });
    expect(waits).toEqual([2_000]);
    expect(seen.map((headers) => headers['idempotency-key'])).toEqual([effectKey, effectKey]);
    const tool = exporter.getFinishedSpans().find((s) => s.name === 'tool')!;
    const { traceId, spanId } = tool.spanContext();
    const clients = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT);
    expect(clients.map((s) => [s.name, s.attributes['http.response.status_code']])).toEqual([
      ['POST', 503],
      ['POST', 201],
    ]);
    for (const [i, client] of clients.entries()) {
      expect(client.parentSpanContext?.spanId).toBe(spanId);
      expect(client.attributes['url.full']).toBe(`${url}/receipts`);
      expect(client.attributes['tidemark.step']).toBe('receipt');
      expect(seen[i]!['traceparent']).toBe(`00-${traceId}-${client.spanContext().spanId}-01`);
    }
  });

  it('outside a step: no Idempotency-Key; a 4xx is returned to the tool, a 429 thrown with its wait', async () => {
    const { url, seen } = await service([
      { status: 404 },
      { status: 429, headers: { 'retry-after': '7' } },
    ]);
    expect((await stepFetch(`${url}/missing`)).status).toBe(404);
    expect(seen[0]!['idempotency-key']).toBeUndefined();
    const thrown = await stepFetch(url, { headers: { 'Idempotency-Key': 'mine' } }).catch(
      (error: unknown) => error,
    );
    expect(thrown).toBeInstanceOf(FetchStatusError);
    expect(thrown).toMatchObject({ status: 429, retryAfterMs: 7_000 });
    expect(seen[1]!['idempotency-key']).toBe('mine');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-12-05T08:00:00Z');
    expect(retryAfterOf('120', now)).toBe(120_000);
    expect(retryAfterOf('Sat, 05 Dec 2026 08:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterOf('Sat, 05 Dec 2026 07:00:00 GMT', now)).toBe(0);
    expect(retryAfterOf('soon', now)).toBeUndefined();
    expect(retryAfterOf(null, now)).toBeUndefined();
  });
});
