import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { TracedStreamHead } from '@tidemark/log';
import {
  formatGeneration,
  type EventIdVerification,
  type RequestId,
  type ResumeDecision,
  type PartitionKey,
} from '@tidemark/protocol';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_TIDEMARK_CLAIM_GENERATION,
  ATTR_TIDEMARK_GENERATION,
  ATTR_TIDEMARK_RESUME_OUTCOME,
  ATTR_TIDEMARK_RESUME_REASON,
  ATTR_TIDEMARK_STREAM,
  contextFromHeaders,
  contextFromMeta,
  tidemarkTracer,
} from '@tidemark/otel';

/** The span of one MCP request at the gateway, from the POST to the end of its response stream. */
export function requestSpan(
  session: PartitionKey,
  request: { readonly id: RequestId; readonly method: string; readonly params?: unknown },
): { span: Span; ctx: Context } {
  const method = request.method;
  const tool =
    method === 'tools/call' ? (request.params as { name?: unknown } | undefined)?.name : undefined;
  // A client that traces puts its context in `_meta`; the call continues that trace.
  const parent = contextFromMeta(request);
  // Named as the MCP conventions name it: the method and, for a tool call, the tool.
  const span = tidemarkTracer().startSpan(
    typeof tool === 'string' ? `${method} ${tool}` : method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        [ATTR_MCP_METHOD_NAME]: method,
        [ATTR_MCP_SESSION_ID]: session,
        [ATTR_JSONRPC_REQUEST_ID]: String(request.id),
        ...(typeof tool === 'string' ? { [ATTR_GEN_AI_TOOL_NAME]: tool } : {}),
      },
    },
    parent,
  );
  return { span, ctx: trace.setSpan(parent, span) };
}

/**
 * The resume decision as a span of its own, in the trace of the call it resumes (the head carries
 * it), linked to this request's own; only an id that verified can name that trace.
 */
export function recordResumeSpan(
  session: PartitionKey,
  claim: EventIdVerification,
  traced: TracedStreamHead | undefined,
  decision: ResumeDecision,
): void {
  const head = traced?.head;
  const here = trace.getSpanContext(context.active());
  const span = tidemarkTracer().startSpan(
    'mcp.resume',
    {
      attributes: {
        [ATTR_MCP_SESSION_ID]: session,
        [ATTR_TIDEMARK_RESUME_OUTCOME]: decision.outcome,
        [ATTR_TIDEMARK_RESUME_REASON]: decision.reason,
        ...(claim.ok ? { [ATTR_TIDEMARK_STREAM]: claim.claim.stream } : {}),
        ...(claim.ok && claim.claim.generation !== undefined
          ? { [ATTR_TIDEMARK_CLAIM_GENERATION]: formatGeneration(claim.claim.generation) }
          : {}),
        ...(head !== undefined
          ? { [ATTR_TIDEMARK_GENERATION]: formatGeneration(head.generation) }
          : {}),
      },
      ...(here === undefined ? {} : { links: [{ context: here }] }),
    },
    traced === undefined ? context.active() : contextFromHeaders(traced.traceHeaders),
  );
  if (decision.outcome === 'invalid')
    span.setStatus({ code: SpanStatusCode.ERROR, message: decision.detail });
  if (decision.outcome === 'reset')
    span.addEvent('tidemark.reset', { 'tidemark.reset.reason': decision.reason });
  span.end();
}
