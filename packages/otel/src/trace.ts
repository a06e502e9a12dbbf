import { context, propagation, trace, type Context, type Tracer } from '@opentelemetry/api';

/** Tidemark's tracer: a no-op until the process registers an SDK. */
export function tidemarkTracer(): Tracer {
  return trace.getTracer('tidemark', '0.1.0');
}

const TRACE_KEYS = new Set(['traceparent', 'tracestate', 'baggage']);

/** The active trace context as record headers (`traceparent`, `tracestate`), for every produce. */
export function traceHeaders(from: Context = context.active()): Array<[string, string]> {
  const carrier: Record<string, string> = {};
  propagation.inject(from, carrier);
  return Object.entries(carrier);
}

/** The trace context a record carries, for every consume; the root context when it carries none. */
export function contextFromHeaders(headers: ReadonlyArray<readonly [string, string]>): Context {
  const carrier: Record<string, string> = {};
  for (const [name, value] of headers) if (TRACE_KEYS.has(name)) carrier[name] = value;
  // Most records of an untraced process carry none: skip the propagator (called per record).
  if (carrier['traceparent'] === undefined) return context.active();
  return propagation.extract(context.active(), carrier);
}

/**
 * The trace context an MCP message carries in `params._meta` (`traceparent`, `tracestate`), so a
 * client's trace continues into the server; `base` when it carries none.
 */
export function contextFromMeta(message: unknown, base: Context = context.active()): Context {
  const meta = (message as { params?: { _meta?: unknown } } | undefined)?.params?._meta;
  if (meta === null || typeof meta !== 'object') return base;
  const carrier: Record<string, string> = {};
  for (const [name, value] of Object.entries(meta))
    if (TRACE_KEYS.has(name) && typeof value === 'string') carrier[name] = value;
  return carrier['traceparent'] === undefined ? base : propagation.extract(base, carrier);
}

/**
 * A server → client request or notification with the active trace context in its `_meta`, so the
 * client's handler (an elicitation, a sampling request) joins the tool's trace. Other messages,
 * and any message when no trace is active, are returned as they are.
 */
export function withTraceMeta<M>(message: M, from: Context = context.active()): M {
  const m = message as { method?: unknown; params?: Record<string, unknown> };
  if (typeof m.method !== 'string' || trace.getSpanContext(from) === undefined) return message;
  const carrier = Object.fromEntries(traceHeaders(from));
  if (carrier['traceparent'] === undefined) return message;
  const params = m.params ?? {};
  const meta = (params['_meta'] as Record<string, unknown> | undefined) ?? {};
  return { ...m, params: { ...params, _meta: { ...meta, ...carrier } } } as M;
}

/**
 * Whether every event of a stream gets its own spans (the worker's produce, the gateway's receive
 * and SSE write). Off by default: a call's trace holds the request, the hops of its records into
 * and out of the log, and its terminal record's way to the client, while every event still carries
 * its trace context in its headers — per-event spans cost most of a traced process's throughput.
 * On with `setSpansPerEvent(true)` (the CLI's `--trace-events` or `TIDEMARK_TRACE_EVENTS=true`), to
 * follow single events.
 */
let everyEvent = false;

export function spansPerEvent(): boolean {
  return everyEvent;
}

export function setSpansPerEvent(on: boolean): void {
  everyEvent = on;
}
