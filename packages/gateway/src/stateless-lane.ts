import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import {
  classifyInboundRequest,
  type InboundLegacyRoute,
  type InboundModernRoute,
} from '@modelcontextprotocol/server';
import {
  idempotentRoutingKey,
  isStatelessRevision,
  MetaKeys,
  TASK_STREAM_METHOD,
  readIdempotencyKey,
  type RequestId,
  type RequestRecord,
} from '@tidemark/protocol';
import { HttpRefusals, type HttpRefusal } from './http/http-refusals.js';
import { callerOf, type Asker } from './auth/index.js';
import type { GatewayContext } from './gateway-context.js';
import { requestSpan } from './gateway-spans.js';
import { sendRefusal } from './http/http-answers.js';
import { accepts, headerValue } from './http/http-guards.js';
import { handleTaskMethod, isTaskMethod } from './tasks/index.js';
import { handleTaskListen, listenedTaskIds } from './tasks/index.js';
import { handleTaskStream } from './tasks/index.js';
import { deliverStream, newStream, respondJson } from './request-answers.js';

// The stateless lane (2026-07-28): no session, no event ids, no resume. The request is routed by
// a key of its own through the same log; closing the response cancels it.

/** A request of the stateless lane names its revision in a header or in its `_meta` envelope. */
export function looksStateless(req: Request, body: unknown): boolean {
  if (isStatelessRevision(req.headers['mcp-protocol-version'])) return true;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  return meta !== undefined && MetaKeys.protocolVersion in meta;
}

/** GET and DELETE are not part of a lane without sessions. */
export function isStatelessRequest(req: Request): boolean {
  return isStatelessRevision(req.headers['mcp-protocol-version']);
}

/**
 * The SDK's classification of a stateless POST: a route to serve, or the SDK's own refusal (what
 * the gateway accepts is what the worker's SDK accepts).
 */
export function classifyStateless(
  req: Request,
  body: unknown,
):
  | { ok: true; route: InboundLegacyRoute | InboundModernRoute }
  | { ok: false; refusal: HttpRefusal } {
  const route = classifyInboundRequest({
    httpMethod: 'POST',
    body,
    ...optional('protocolVersionHeader', req.headers['mcp-protocol-version']),
    ...optional('mcpMethodHeader', req.headers['mcp-method']),
    ...optional('mcpNameHeader', req.headers['mcp-name']),
  });
  if (route.kind !== 'reject') return { ok: true, route };
  const id = (body as { id?: RequestId | null } | undefined)?.id ?? null;
  return {
    ok: false,
    refusal: {
      status: route.httpStatus,
      code: route.code,
      message: route.message,
      reason: 'invalid-request',
      id,
      ...(route.data === undefined ? {} : { data: route.data }),
    },
  };
}

export async function handleStatelessPost(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  route: InboundModernRoute,
  asker: Asker,
): Promise<void> {
  if (route.messageKind === 'notification') {
    res.status(202).end();
    return;
  }
  const request = route.message as unknown as Record<string, unknown> & {
    id: RequestId;
    method: string;
  };
  if (isTaskMethod(request.method)) return handleTaskMethod(ctx, res, route, request, asker);
  // A stream is the answer to everything below: none is written to the log past the share's cap.
  const full = ctx.streams.refusalIfFull(undefined, asker.share);
  if (full !== undefined) return sendRefusal(res, full);
  if (request.method === TASK_STREAM_METHOD) return handleTaskStream(ctx, res, request, asker);
  const taskIds = listenedTaskIds(request.method, request['params']);
  if (taskIds !== undefined) return handleTaskListen(ctx, res, request, taskIds, asker);
  const keyed = idempotencyKeyOf(req, request);
  if (!keyed.ok) return sendRefusal(res, HttpRefusals.badIdempotencyKey(request.id, keyed.problem));
  // A keyed call's routing key derives from its key: every request with it meets the first. Each
  // keyed request gets a stream of its own (an id of the gateway's; its answer goes out with the
  // client's), so a retry that reuses the JSON-RPC id is a request like any other.
  const key =
    keyed.key !== undefined
      ? idempotentRoutingKey(asker.auth?.subject, keyed.key)
      : // A tools/call may become a task: its id comes back in `Mcp-Name`.
        ctx.keys.routingKey(request.method === 'tools/call');
  const logged = keyed.key === undefined ? request : { ...request, id: `tm-${randomUUID()}` };
  const answerAs = keyed.key === undefined ? undefined : request.id;
  const started = await newStream(ctx, key, logged.id);
  const record = (message: Record<string, unknown>): RequestRecord => ({
    lane: 'stateless',
    key,
    message,
    classification: route.classification,
    subject: asker.auth?.subject,
    share: asker.share,
    ...callerOf(asker.auth),
    tasks: ctx.options.tasks,
    ...(keyed.key === undefined ? {} : { idempotent: true }),
  });
  // A closed stream cancels a call — but not a keyed one: its client comes back with the key.
  const cancel = () => {
    if (keyed.key !== undefined) return;
    void ctx.producer
      .produce(key, [
        record({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: request.id, reason: 'response stream closed' },
        }),
      ])
      .catch(ctx.onError);
  };
  if (!accepts(req, 'text/event-stream')) {
    res.once('close', () => {
      if (!res.writableFinished) cancel();
    });
    const produce = () => ctx.producer.produce(key, [record(logged)]);
    return respondJson(ctx, res, key, started, produce, false, answerAs);
  }
  const { span, ctx: traced } = requestSpan(key, request);
  const { partition, stream, highWatermark, cursor } = started;
  const at = { session: key, stream, partition, fromOffset: highWatermark };
  // Its client cannot resume it elsewhere (closing it cancels the call): a drain lets it end.
  const sse = ctx.streams.open(res, undefined, asker.share, { resumable: false });
  deliverStream(ctx, sse, at, cursor, {
    eventIds: false,
    ...(answerAs === undefined ? {} : { answerAs }),
    onEnd: (reason) => {
      if (reason === 'closed') cancel();
      span.end();
    },
  });
  await ctx.producer.produce(key, [record(logged)], traced);
}

/** A `tools/call`'s idempotency key (header or `_meta`); other methods' keys are not read. */
function idempotencyKeyOf(req: Request, request: Record<string, unknown> & { method: string }) {
  if (request.method !== 'tools/call') return { ok: true as const, key: undefined };
  const params = request['params'] as { _meta?: unknown } | undefined;
  return readIdempotencyKey(headerValue(req.headers['idempotency-key']), params?._meta);
}

function optional<K extends string>(
  name: K,
  value: string | string[] | undefined,
): Partial<Record<K, string>> {
  const single = headerValue(value);
  return single === undefined ? {} : ({ [name]: single } as Record<K, string>);
}
