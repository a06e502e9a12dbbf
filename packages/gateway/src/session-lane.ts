import type { Request, Response } from 'express';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { SessionRecord } from '@tidemark/log';
import {
  agreedSessionVersion,
  DEFAULT_SESSION_PROTOCOL_VERSION,
  EventMethods,
  idempotentRoutingKey,
  parseSessionId,
  PRIMING_PROTOCOL_VERSION,
  readIdempotencyKey,
  requestStreamId,
  SESSION_ENDED,
  SESSION_PROTOCOL_VERSIONS,
  type Caller,
  type RequestId,
  type SessionId,
  type RoutingKey,
} from '@tidemark/protocol';
import { HttpRefusals } from './http/http-refusals.js';
import { callerOf, type Asker } from './auth/index.js';
import { streamMinter, type GatewayContext } from './gateway-context.js';
import { requestSpan } from './gateway-spans.js';
import { pass, refuse, sendRefusal, type Checked } from './http/http-answers.js';
import { accepts, headerValue } from './http/http-guards.js';
import { deliverStream, newStream, respondJson } from './request-answers.js';

// The session lane (2025-03-26 … 2025-11-25): `initialize` opens a session in the log, every later
// message names it in `Mcp-Session-Id`, and each request's answer streams from the log.

type JsonRpcRequest = JSONRPCMessage & { id: RequestId; method: string };

function isRequest(message: JSONRPCMessage): message is JsonRpcRequest {
  const { id, method } = message as { id?: unknown; method?: unknown };
  return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number');
}

/** A POST of the session lane, past authentication and the message checks. */
export async function handleSessionPost(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  inbound: { messages: JSONRPCMessage[]; batch: boolean },
  asker: Asker,
): Promise<void> {
  const initialize = inbound.messages.find((m) => 'method' in m && m.method === 'initialize');
  if (initialize === undefined) return continueSession(ctx, req, res, inbound, asker);
  if (inbound.messages.length > 1) return sendRefusal(res, HttpRefusals.initializeAlone());
  if (!isRequest(initialize)) return sendRefusal(res, HttpRefusals.initializeNotRequest());
  return startSession(ctx, req, res, initialize, asker);
}

/** `initialize`: the session's record first (any replica serves it from then on), then the request. */
async function startSession(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  initialize: JsonRpcRequest,
  asker: Asker,
): Promise<void> {
  // Kept for the session's lifetime (to restore its server on any worker): bounded.
  const params = (initialize as { params?: { protocolVersion?: unknown } }).params;
  const paramsBytes = Buffer.byteLength(JSON.stringify(params ?? {}));
  if (paramsBytes > ctx.options.maxInitializeBytes)
    return sendRefusal(
      res,
      HttpRefusals.initializeTooLarge(paramsBytes, ctx.options.maxInitializeBytes),
    );
  // Its answer is a stream of the subject's like any other: counted against the same cap.
  const full = ctx.streams.refusalIfFull(undefined, asker.share);
  if (full !== undefined) return sendRefusal(res, full);
  const session = ctx.keys.session();
  if (!ctx.shareSessions.start(asker.share, session))
    return sendRefusal(res, HttpRefusals.tooManySessions(ctx.options.maxSessionsPerSubject));
  // The revision the worker's server will answer, not the one asked for: later requests are
  // checked against it.
  const version = agreedSessionVersion(params?.protocolVersion);
  await ctx.sessions
    .create({
      id: session,
      protocolVersion: version,
      initialize,
      ...(asker.auth === undefined ? {} : { subject: asker.auth.subject }),
      createdAtMs: ctx.now(),
    })
    .catch((error: unknown) => {
      ctx.shareSessions.ended(asker.share, session); // never started: not counted
      throw error;
    });
  // The params travel once, in the session's record; the worker reads them from there.
  const { params: _kept, ...withoutParams } = initialize as JsonRpcRequest & { params?: unknown };
  const to = { session, share: asker.share, ...callerOf(asker.auth) };
  return streamRequest(ctx, req, res, to, version, withoutParams);
}

/** Any other message of a session: notifications and responses are written, a request streamed. */
async function continueSession(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  { messages, batch }: { messages: JSONRPCMessage[]; batch: boolean },
  asker: Asker,
): Promise<void> {
  // A request's id must be new in its session; its head is looked up beside the session's, so
  // the check adds no round trip (nothing is answered from it before the session is verified).
  const single = messages.length === 1 && isRequest(messages[0]!) ? messages[0] : undefined;
  const claimed = parseSessionId(headerValue(req.headers['mcp-session-id']) ?? '');
  const earlier =
    single === undefined || claimed === undefined
      ? undefined
      : ctx.heads.get(claimed, requestStreamId(single.id));
  earlier?.catch(() => undefined); // a refused request never awaits it
  const found = await findSession(ctx, req, asker);
  if (!found.ok) return sendRefusal(res, found.refusal);
  const session = found.value.id;
  ctx.shareSessions.seen(asker.share, session);
  const version = negotiatedVersion(req, found.value.protocolVersion);
  if (!version.ok) return sendRefusal(res, version.refusal);
  if (batch && version.value !== DEFAULT_SESSION_PROTOCOL_VERSION)
    return sendRefusal(res, HttpRefusals.batchNotAllowed());
  const requests = messages.filter(isRequest);
  if (requests.length === 0) {
    await ctx.producer.produce(
      session,
      messages.map((message) => ({
        lane: 'session',
        session,
        message,
        share: asker.share,
        ...callerOf(asker.auth),
      })),
    );
    res.status(202).end();
    return;
  }
  if (messages.length > 1) return sendRefusal(res, HttpRefusals.batchWithRequests());
  const request = requests[0]!;
  const full = ctx.streams.refusalIfFull(session, asker.share);
  if (full !== undefined) return sendRefusal(res, full);
  // An id names its stream: one used before in this session (the spec forbids reuse) would
  // read another call's stream and never see its own answer.
  if ((await earlier) !== undefined)
    return sendRefusal(res, HttpRefusals.requestIdReused(request.id));
  const keyed = keyedCall(req, request, asker);
  if (!keyed.ok) return sendRefusal(res, keyed.refusal);
  const to = { session, share: asker.share, ...callerOf(asker.auth) };
  return streamRequest(ctx, req, res, to, version.value, request, keyed.value);
}

/**
 * A `tools/call` with an idempotency key (its `_meta`, or the `Idempotency-Key` header) goes to the
 * worker that owns the key first: the key's routing key, derived from the subject and the key.
 */
function keyedCall(
  req: Request,
  request: JsonRpcRequest,
  asker: Asker,
): Checked<{ key: RoutingKey; subject: string | undefined } | undefined> {
  if (request.method !== 'tools/call') return pass(undefined);
  const meta = (request as { params?: { _meta?: unknown } }).params?._meta;
  const read = readIdempotencyKey(headerValue(req.headers['idempotency-key']), meta);
  if (!read.ok) return refuse(HttpRefusals.badIdempotencyKey(request.id, read.problem));
  if (read.key === undefined) return pass(undefined);
  return pass({
    key: idempotentRoutingKey(asker.auth?.subject, read.key),
    subject: asker.auth?.subject,
  });
}

/** Writes one request and answers it: an SSE stream of its messages, or its final one as JSON. */
async function streamRequest(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  { session, share, caller }: { session: SessionId; share: string; caller?: Caller },
  version: string,
  request: JsonRpcRequest,
  keyed?: { key: RoutingKey; subject: string | undefined },
): Promise<void> {
  const started = await newStream(ctx, session, request.id);
  const produce = (parent?: Parameters<GatewayContext['producer']['produce']>[2]) =>
    keyed === undefined
      ? ctx.producer.produce(
          session,
          [{ lane: 'session', session, message: request, share, caller }],
          parent,
        )
      : ctx.producer.produce(
          keyed.key,
          [{ lane: 'keyed-session', ...keyed, session, message: request, share, caller }],
          parent,
        );
  if (!accepts(req, 'text/event-stream'))
    return respondJson(ctx, res, session, started, () => produce(), true);
  const { partition, stream, highWatermark, cursor } = started;
  const sse = ctx.streams.open(res, session, share);
  // A 2025-11-25 client can resume before the first event: the priming event gives it an id.
  if (version >= PRIMING_PROTOCOL_VERSION) {
    const mint = streamMinter(ctx, session, partition, stream);
    sse.prime(mint(highWatermark, undefined, 0));
  }
  const { span, ctx: traced } = requestSpan(session, request);
  deliverStream(ctx, sse, { session, stream, partition, fromOffset: highWatermark }, cursor, {
    onEnd: () => span.end(),
  });
  if (request.method === EventMethods.stream) endsWithConnection(ctx, res, session, share, request);
  await produce(traced);
}

/**
 * A push stream (`events/stream`) is for whoever reads it: its connection closed, it is cancelled
 * (as every request is on the stateless lane) instead of holding its subject's slot for nobody. A
 * call goes on for its client to resume; a push client asks again from its last cursor.
 */
function endsWithConnection(
  ctx: GatewayContext,
  res: Response,
  session: SessionId,
  share: string,
  request: JsonRpcRequest,
): void {
  res.once('close', () => {
    if (res.writableFinished) return;
    const message = {
      jsonrpc: '2.0' as const,
      method: 'notifications/cancelled',
      params: { requestId: request.id, reason: 'response stream closed' },
    };
    void ctx.producer
      .produce(session, [{ lane: 'session', session, message, share }])
      .catch(ctx.onError);
  });
}

/** DELETE: the session ends in the log, on its worker, and in this replica's open streams. */
export async function handleDelete(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  asker: Asker,
): Promise<void> {
  const found = await findSession(ctx, req, asker);
  if (!found.ok) return sendRefusal(res, found.refusal);
  const session = found.value.id;
  await ctx.sessions.end(session);
  ctx.shareSessions.ended(asker.share, session);
  // The worker that owns the session cancels its running calls (their streams end, on every
  // replica); this replica's open streams of the session end now.
  await ctx.producer.produce(session, [{ lane: 'control', session, control: SESSION_ENDED }]);
  ctx.streams.endSession(session);
  res.status(200).end();
}

/** The session named by `Mcp-Session-Id`; another subject's is answered exactly like an unknown one. */
export async function findSession(
  ctx: GatewayContext,
  req: Request,
  asker: Asker,
): Promise<Checked<SessionRecord & { readonly id: SessionId }>> {
  const header = headerValue(req.headers['mcp-session-id']);
  if (header === undefined) return refuse(HttpRefusals.missingSession());
  const id = parseSessionId(header);
  if (id === undefined) return refuse(HttpRefusals.unknownSession());
  const record = await ctx.sessions.get(id);
  // A task's record lives beside the sessions, under its task id, and an idempotency key's claim
  // under its routing key: neither is a session.
  if (
    record === undefined ||
    record.task !== undefined ||
    record.idempotency !== undefined ||
    (asker.auth !== undefined && record.subject !== asker.auth.subject)
  )
    return refuse(HttpRefusals.unknownSession());
  return pass({ ...record, id });
}

/** The request's revision: its header, else the session's, else the spec's default. */
export function negotiatedVersion(req: Request, negotiated: string): Checked<string> {
  const header = req.headers['mcp-protocol-version'];
  const version =
    header === undefined
      ? negotiated !== ''
        ? negotiated
        : DEFAULT_SESSION_PROTOCOL_VERSION
      : String(header);
  if (!(SESSION_PROTOCOL_VERSIONS as readonly string[]).includes(version))
    return refuse(HttpRefusals.unsupportedVersion(version, SESSION_PROTOCOL_VERSIONS));
  return pass(version);
}
