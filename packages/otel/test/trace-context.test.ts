import { context, propagation, trace, type Context } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contextFromHeaders, contextFromMeta, traceHeaders, withTraceMeta } from '../src/index.js';

// Trace context crosses two boundaries Tidemark owns: Kafka record headers (every produce and
// consume) and an MCP message's `_meta` (a client's trace into the server, a tool's trace into the
// client's elicitation handler). The whole stack is traced in trace.test.ts; these are the codecs.
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

function sampled(): Context {
  return trace.setSpanContext(context.active(), {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceFlags: 1,
    isRemote: false,
  });
}

describe('trace context in record headers and _meta', () => {
  beforeAll(() => propagation.setGlobalPropagator(new W3CTraceContextPropagator()));
  afterAll(() => propagation.disable());

  it('carries a trace through record headers and back', () => {
    const headers = traceHeaders(sampled());
    expect(headers).toEqual([['traceparent', `00-${TRACE_ID}-${SPAN_ID}-01`]]);
    const back = trace.getSpanContext(contextFromHeaders([['tm-gen', '1.1'], ...headers]));
    expect(back).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
  });

  it('reads no trace from records that carry none, or only other headers', () => {
    expect(trace.getSpanContext(contextFromHeaders([]))).toBeUndefined();
    expect(trace.getSpanContext(contextFromHeaders([['tm-gen', '1.1']]))).toBeUndefined();
  });

  it('continues a client trace from _meta, and ignores _meta without one', () => {
    const message = {
      method: 'tools/call',
      params: { _meta: { traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`, progressToken: 1 } },
    };
    expect(trace.getSpanContext(contextFromMeta(message))?.traceId).toBe(TRACE_ID);
    const base = context.active();
    expect(contextFromMeta({ method: 'ping' }, base)).toBe(base);
    expect(contextFromMeta({ params: { _meta: 'not an object' } }, base)).toBe(base);
  });

  it('stamps server requests with the active trace and leaves responses and untraced calls alone', () => {
    const request = { method: 'elicitation/create', params: { message: 'ok?', _meta: { a: 1 } } };
    expect(withTraceMeta(request, sampled()).params._meta).toEqual({
      a: 1,
      traceparent: `00-${TRACE_ID}-${SPAN_ID}-01`,
    });
    const response = { id: 1, result: {} };
    expect(withTraceMeta(response, sampled())).toBe(response);
    expect(withTraceMeta(request, context.active())).toBe(request);
  });
});
