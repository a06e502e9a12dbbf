import { context, propagation, trace, type Context, type Tracer } from '@opentelemetry/api';

/** Tidemark's tracer: a no-op until the process registers an SDK. */
export function tidemarkTracer(): Tracer {
  return trace.getTracer('tidemark', '0.1.0');
}

/** The active trace context as record headers (`traceparent`, `tracestate`), for every produce. */
export function traceHeaders(from: Context = context.active()): Array<[string, string]> {
  const carrier: Record<string, string> = {};
  propagation.inject(from, carrier);
  return Object.entries(carrier);
}

/** The trace context a record carries, for every consume; the root context when it carries none. */
export function contextFromHeaders(headers: ReadonlyArray<readonly [string, string]>): Context {
  const carrier: Record<string, string> = {};
  for (const [name, value] of headers)
    if (name === 'traceparent' || name === 'tracestate' || name === 'baggage')
      carrier[name] = value;
  return propagation.extract(context.active(), carrier);
}
