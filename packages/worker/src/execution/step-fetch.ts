import { context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_TIDEMARK_STEP,
  ATTR_URL_FULL,
  tidemarkTracer,
} from '@tidemark/otel';
import { FetchStatusError, type StepFetch } from '@tidemark/tools';
import { currentStep } from './steps.js';

/** Responses that ask to be tried again: the step's retry policy does. */
const TRY_AGAIN = new Set([408, 429, 500, 502, 503, 504]);

/**
 * `Execution.fetch`: the global `fetch` with the running step's `effectKey` as `Idempotency-Key`,
 * the call's trace context sent along, a client span, and a response that asks to be tried again
 * thrown as a `FetchStatusError` (with its `Retry-After`) for the step's retry policy.
 */
export const stepFetch: StepFetch = async (input, init) => {
  const url = new URL(input);
  const method = (init?.method ?? 'GET').toUpperCase();
  const step = currentStep();
  const headers = new Headers(init?.headers);
  if (step !== undefined && !headers.has('idempotency-key'))
    headers.set('Idempotency-Key', step.effectKey);
  // The span names where, never what: no query, no credentials in a trace.
  const where = `${url.origin}${url.pathname}`;
  return tidemarkTracer().startActiveSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_URL_FULL]: where,
        [ATTR_SERVER_ADDRESS]: url.hostname,
        ...(step === undefined ? {} : { [ATTR_TIDEMARK_STEP]: step.step }),
      },
    },
    async (span) => {
      try {
        propagation.inject(context.active(), headers, {
          set: (carrier, key, value) => carrier.set(key, value),
        });
        const response = await fetch(url, { ...init, method, headers });
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);
        if (!TRY_AGAIN.has(response.status)) return response;
        const retryAfterMs = retryAfterOf(response.headers.get('retry-after'), Date.now());
        await response.body?.cancel();
        throw new FetchStatusError(response.status, where, retryAfterMs);
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
};

/** A `Retry-After` header's wait in ms: seconds, or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterOf(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}
