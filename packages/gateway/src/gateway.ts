import { createServer, type Server } from 'node:http';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import express, { type NextFunction, type Request, type Response } from 'express';
import { SessionStore, StreamHeadStore } from '@tidemark/log';
import { classifyInboundRequest, type InboundModernRoute } from '@modelcontextprotocol/server';
import {
  CLASSIFICATION_HEADER,
  CONTROL_HEADER,
  CONTROL_METHOD,
  decideResume,
  decodeStamp,
  encodeEventId,
  formatGeneration,
  invalidResumeBody,
  newSessionId,
  parseSessionId,
  partitionForSession,
  requestStreamId,
  resetNotification,
  SESSION_ENDED,
  SESSION_ENDED_METHOD,
  SESSION_TOUCHED,
  STANDALONE_STREAM,
  SUBJECT_HEADER,
  StreamCursor,
  verifyEventId,
  WireAnswers,
  type LogIdentity,
  type RequestId,
  type SessionId,
  type StreamId,
} from '@tidemark/protocol';
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
} from '@opentelemetry/api';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_JSONRPC_REQUEST_ID,
  ATTR_MCP_METHOD_NAME,
  ATTR_MCP_SESSION_ID,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  ATTR_TIDEMARK_CLAIM_GENERATION,
  ATTR_TIDEMARK_GENERATION,
  ATTR_TIDEMARK_RESUME_OUTCOME,
  ATTR_TIDEMARK_RESUME_REASON,
  recordLiveStreams,
  recordRefusal,
  recordResume,
  tidemarkTracer,
  traceHeaders,
  contextFromHeaders,
  contextFromMeta,
  ATTR_TIDEMARK_STREAM,
} from '@tidemark/otel';
import { deliver, EventTails } from './delivery.js';
import { parseInbound } from './inbound.js';
import { serveResourceMetadata } from './auth/resource-metadata.js';
import { bodyRefusal, frontDoor, isJson, jsonError, LOOPBACK_ADDRESSES } from './http-guards.js';
import { compileGatewayOptions, type GatewayOptions } from './gateway-options.js';
import type { AuthResult } from './auth/authenticators.js';
import { SseStream } from './sse.js';

/** The legacy-lane protocol revisions this gateway speaks (sessions, SSE ids, resume). */
export const LEGACY_PROTOCOL_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25'] as const;

interface JsonRpcMessage {
  jsonrpc?: unknown;
  id?: RequestId | null;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

export interface Gateway {
  readonly app: express.Express;
  /** Listens on `host:port` (port 0: any free one); resolves with the server. */
  listen(port: number, host: string): Promise<Server>;
  /** SIGTERM: stop accepting, end open streams with a retry hint so clients resume elsewhere. */
  drain(): Promise<void>;
  /** Live SSE streams now. */
  readonly openStreams: number;
}

/**
 * The stateless gateway: MCP Streamable HTTP for the legacy lane (2025-03-26 … 2025-11-25).
 * Everything that matters lives in the log — sessions, requests, events, stream heads — so any
 * replica serves any session and a client may change replica on every request.
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const o = compileGatewayOptions(options);
  const now = options.now ?? Date.now;
  const onError =
    options.onError ??
    ((error: unknown) =>
      process.stderr.write(
        `tidemark gateway: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      ));
  const { log: port, topics, keyring } = options;
  const partitionCount = await port.partitionCount(topics.events);
  const logIdentity: LogIdentity = await port.identity(topics.events);
  const stores = { port, topics, partitionCount };
  // A gateway needs a session's version and subject, not its initialize (the workers do).
  const sessions = new SessionStore({ ...stores, withInitialize: false });
  const heads = new StreamHeadStore(stores);
  const tails = new EventTails(port, topics.events, o.tailWaitMs);
  const open = new Set<SseStream>();
  // Per subject (or address), in this replica's memory: a token bucket of twice the rate.
  const limiter = new RateLimiterMemory({
    points: o.maxRequestsPerSecond * 2,
    duration: 2,
  });
  /** This replica's open streams of each session: DELETE ends them. */
  const bySession = new Map<SessionId, Set<SseStream>>();
  const servers = new Set<Server>();
  let draining = false;
  // A session whose client only listens sends no requests: its open streams keep it alive.
  const touchTimer = setInterval(
    () => void touchOpenSessions().catch(onError),
    Math.max(100, Math.floor(o.sessionTtlMs / 3)),
  );
  touchTimer.unref();
  const sseOptions = {
    keepAliveMs: o.keepAliveMs,
    maxBufferedBytes: o.maxBufferedBytes,
    retryMs: o.retryMs,
  };

  const app = express();
  app.disable('x-powered-by');
  const metadataUrl = serveResourceMetadata(app, options.resourceMetadata);
  const door = frontDoor({
    path: o.path,
    allowedOrigins: o.allowedOrigins,
    allowedHosts: o.allowedHosts,
    isDraining: () => draining,
  });
  door.install(app);

  // A declared length past the limit is refused before a byte of the body is read (body-parser
  // would read it all to its end first); the connection closes after the answer.
  app.post(o.path, (req, res, next) => {
    if (Number(req.headers['content-length'] ?? 0) <= o.maxBodyBytes) return next();
    res.setHeader('Connection', 'close');
    jsonError(res, 413, -32000, `Request body larger than ${o.maxBodyBytes} bytes`, 'body-size');
  });
  app.post(o.path, express.json({ limit: o.maxBodyBytes, type: () => true }), (req, res, next) => {
    void handlePost(req, res).catch(next);
  });
  app.get(o.path, (req, res, next) => {
    void handleGet(req, res).catch(next);
  });
  app.delete(o.path, (req, res, next) => {
    void handleDelete(req, res).catch(next);
  });
  app.all(o.path, (_req, res) => {
    res.setHeader('Allow', 'GET, POST, DELETE');
    jsonError(res, 405, -32000, 'Method not allowed');
  });
  // One place that turns anything thrown into an answer: bad JSON, oversize bodies, log failures.
  // A client's mistake is a 4xx and not logged as a failure; only the server's own is a 5xx.
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return void res.end();
    const refusal = bodyRefusal(error, o.maxBodyBytes);
    // An oversize body is not read to its end: the connection closes after the answer.
    if (refusal?.status === 413) res.setHeader('Connection', 'close');
    if (refusal !== undefined)
      return void jsonError(res, refusal.status, refusal.code, refusal.message, 'body');
    onError(error);
    jsonError(res, 503, -32000, 'The log is unavailable; retry');
  });

  async function handlePost(req: Request, res: Response): Promise<void> {
    if (!isJson(req.headers['content-type']))
      return jsonError(
        res,
        415,
        -32000,
        'Unsupported Media Type: Content-Type must be application/json',
      );
    const accept = String(req.headers.accept ?? '');
    if (
      !accept.includes('application/json') &&
      !accept.includes('text/event-stream') &&
      !accept.includes('*/*')
    ) {
      return jsonError(
        res,
        406,
        -32000,
        'Not Acceptable: Accept must include application/json and text/event-stream',
      );
    }
    // Authentication comes before either lane and before anything is written to the log.
    const auth = await authenticate(req, res);
    if (auth === null) return;
    const body = req.body as unknown;
    const inbound = parseInbound(body, {
      maxDepth: o.maxJsonDepth,
      maxBatch: o.maxBatchMessages,
    });
    if (!inbound.ok) {
      recordRefusal(400, 'invalid-request');
      res.status(400).json({
        jsonrpc: '2.0',
        id: inbound.id,
        error: { code: inbound.code, message: inbound.message },
      });
      return;
    }
    if (looksModern(req, body)) {
      const route = classifyInboundRequest({
        httpMethod: 'POST',
        body,
        ...optionalHeader('protocolVersionHeader', req.headers['mcp-protocol-version']),
        ...optionalHeader('mcpMethodHeader', req.headers['mcp-method']),
        ...optionalHeader('mcpNameHeader', req.headers['mcp-name']),
      });
      if (route.kind === 'reject') {
        res.status(route.httpStatus).json({
          jsonrpc: '2.0',
          id: (body as JsonRpcMessage | undefined)?.id ?? null,
          error: {
            code: route.code,
            message: route.message,
            ...(route.data === undefined ? {} : { data: route.data }),
          },
        });
        return;
      }
      if (route.kind === 'modern') return handleModern(req, res, route, auth);
    }
    const messages = inbound.messages as JsonRpcMessage[];

    const initialize = messages.find((m) => m.method === 'initialize');
    if (initialize !== undefined) {
      if (messages.length > 1)
        return jsonError(res, 400, -32600, 'Invalid Request: initialize must be sent alone');
      if (!isRequest(initialize))
        return jsonError(
          res,
          400,
          -32600,
          'Invalid Request: initialize must be a request (with an id)',
          'invalid-request',
        );
      // Kept for the session's lifetime (to restore its server on any worker): bounded.
      const paramsBytes = Buffer.byteLength(JSON.stringify(initialize.params ?? {}));
      if (paramsBytes > o.maxInitializeBytes)
        return jsonError(
          res,
          400,
          -32602,
          `Invalid params: initialize params are ${paramsBytes} bytes, more than the ${o.maxInitializeBytes} this server keeps`,
          'initialize-size',
        );
      const session = newSessionId();
      const requested = (initialize.params as { protocolVersion?: unknown } | undefined)
        ?.protocolVersion;
      const version = typeof requested === 'string' ? requested : '';
      await sessions.create({
        id: session,
        protocolVersion: version,
        initialize,
        ...(auth === undefined ? {} : { subject: auth.subject }),
        createdAtMs: now(),
      });
      // The params travel once, in the session's record; the worker reads them from there.
      const { params: _kept, ...withoutParams } = initialize;
      return streamRequest(req, res, session, version, withoutParams);
    }

    // A request's id must be new in its session; its head is looked up beside the session's, so
    // the check adds no round trip (nothing is answered from it before the session is verified).
    const single = messages.length === 1 && isRequest(messages[0]!) ? messages[0] : undefined;
    const header = req.headers['mcp-session-id'];
    const claimed = parseSessionId((Array.isArray(header) ? header[0] : header) ?? '');
    const earlier =
      single === undefined || claimed === undefined
        ? undefined
        : heads.get(claimed, requestStreamId(single.id));
    earlier?.catch(() => undefined); // a refused request never awaits it
    const found = await findSession(req, res, auth);
    if (found === undefined) return;
    const version = protocolVersionOf(req, res, found.protocolVersion);
    if (version === undefined) return;
    if (inbound.batch && version !== '2025-03-26')
      return jsonError(
        res,
        400,
        -32600,
        'Invalid Request: JSON-RPC batches are not allowed in this protocol version',
      );
    const requests = messages.filter(isRequest);
    if (requests.length === 0) {
      await produce(found.id, messages);
      res.status(202).end();
      return;
    }
    if (messages.length > 1)
      return jsonError(
        res,
        400,
        -32600,
        'Invalid Request: batches with requests are not supported; send requests one per POST',
      );
    const request = requests[0]!;
    if (tooManyStreams(found.id, res)) return;
    // An id names its stream: one used before in this session (the spec forbids reuse) would
    // read another call's stream and never see its own answer.
    if ((await earlier) !== undefined)
      return jsonError(
        res,
        400,
        -32600,
        `Invalid Request: request id ${JSON.stringify(request.id)} was already used in this session`,
      );
    return streamRequest(req, res, found.id, version, request);
  }

  /**
   * The modern lane (2026-07-28): no session, no event ids, no resume. The request is routed by a
   * key of its own through the same log; closing the response cancels it.
   */
  async function handleModern(
    req: Request,
    res: Response,
    route: InboundModernRoute,
    auth: AuthResult | undefined,
  ): Promise<void> {
    if (route.messageKind === 'notification') {
      res.status(202).end();
      return;
    }
    const request = route.message as unknown as JsonRpcMessage & { id: RequestId };
    const key = newSessionId();
    const { partition, stream, highWatermark, cursor } = await newStream(key, request.id);
    // The classification binds the worker's server to the request's revision; its presence marks
    // a record of the modern lane.
    const modernHeaders: Array<[string, string]> = [
      [CLASSIFICATION_HEADER, JSON.stringify(route.classification)],
      ...(auth === undefined ? [] : ([[SUBJECT_HEADER, auth.subject]] as Array<[string, string]>)),
    ];
    const cancel = () =>
      void produce(
        key,
        [
          {
            jsonrpc: '2.0',
            method: 'notifications/cancelled',
            params: { requestId: request.id, reason: 'response stream closed' },
          },
        ],
        modernHeaders,
      ).catch(onError);
    if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
      res.once('close', () => {
        if (!res.writableFinished) cancel();
      });
      return respondJson(res, key, partition, stream, cursor, highWatermark, request, {
        modern: modernHeaders,
      });
    }
    const { span, ctx } = requestSpan(key, request);
    deliverStream(openSse(res, {}), key, stream, partition, cursor, highWatermark, {
      eventIds: false,
      onEnd: (reason) => {
        if (reason === 'closed') cancel();
        span.end();
      },
    });
    await produce(key, [request], modernHeaders, ctx);
  }

  async function streamRequest(
    req: Request,
    res: Response,
    session: SessionId,
    version: string,
    request: JsonRpcMessage & { id: RequestId },
  ): Promise<void> {
    const { partition, stream, highWatermark, cursor } = await newStream(session, request.id);
    const accept = String(req.headers.accept ?? '');
    if (!accept.includes('text/event-stream'))
      return respondJson(res, session, partition, stream, cursor, highWatermark, request);

    const sse = openSse(res, { 'Mcp-Session-Id': session });
    if (version >= '2025-11-25')
      sse.prime(
        encodeEventId(
          {
            log: logIdentity,
            partition,
            offset: highWatermark,
            generation: undefined,
            seq: 0,
            stream,
          },
          session,
          keyring,
        ),
      );
    const { span, ctx } = requestSpan(session, request);
    deliverStream(sse, session, stream, partition, cursor, highWatermark, {
      onEnd: () => span.end(),
    });
    await produce(session, [request], [], ctx);
  }

  /** A client that accepts only JSON: wait for the final message and answer it as the body. */
  async function respondJson(
    res: Response,
    session: SessionId,
    partition: number,
    stream: StreamId,
    cursor: StreamCursor<unknown>,
    fromOffset: bigint,
    request: JsonRpcMessage,
    lane: { modern?: Array<[string, string]> } = {},
  ): Promise<void> {
    const final = new Promise<unknown>((resolve, reject) => {
      const subscription = tails.tail(partition).subscribe(fromOffset, {
        onRecords: (records) => {
          for (const record of records) {
            if (record.key !== session) continue;
            const step = stepOf(cursor, record, stream);
            if (step?.kind === 'deliver' && step.final) {
              subscription.close();
              resolve(step.record.payload);
            }
          }
        },
        onError: reject,
      });
      res.once('close', () => subscription.close());
    });
    await produce(session, [request], lane.modern ?? []);
    const payload = await final;
    // A modern request has no session: its key is internal routing, never shown.
    if (lane.modern === undefined) res.setHeader('Mcp-Session-Id', session);
    res.status(200).json(payload ?? null);
  }

  /** A 2026-07-28 client has no sessions: GET and DELETE are not part of its lane. */
  function refuseModern(req: Request, res: Response): boolean {
    if (!isModernVersion(req.headers['mcp-protocol-version'])) return false;
    res.setHeader('Allow', 'POST');
    jsonError(
      res,
      405,
      -32000,
      'Method not allowed: protocol revision 2026-07-28 has no sessions (POST only)',
    );
    return true;
  }

  async function handleGet(req: Request, res: Response): Promise<void> {
    if (refuseModern(req, res)) return;
    if (!String(req.headers.accept ?? '').includes('text/event-stream'))
      return jsonError(res, 406, -32000, 'Not Acceptable: Accept must include text/event-stream');
    const auth = await authenticate(req, res);
    if (auth === null) return;
    const found = await findSession(req, res, auth);
    if (found === undefined) return;
    if (tooManyStreams(found.id, res)) return;
    if (protocolVersionOf(req, res, found.protocolVersion) === undefined) return;
    const session = found.id;
    const partition = partitionForSession(session, partitionCount);
    const lastEventId = req.headers['last-event-id'];

    if (lastEventId === undefined) {
      const offsets = await port.offsets(topics.events, partition);
      // The standalone stream: server messages not tied to a request, from now on.
      const sse = openSse(res, { 'Mcp-Session-Id': session });
      const cursor = new StreamCursor<unknown>({
        generation: undefined,
        nextSeq: undefined,
        clientHasEvents: false,
        fromOffset: offsets.highWatermark,
      });
      deliverStream(sse, session, STANDALONE_STREAM, partition, cursor, offsets.highWatermark);
      return;
    }

    const claim = verifyEventId(Array.isArray(lastEventId) ? lastEventId[0] : lastEventId, {
      session,
      keyring,
      nowMs: now(),
    });
    const traced = claim.ok ? await heads.getTraced(session, claim.claim.stream) : undefined;
    const head = traced?.head;
    // Read after the head: the worker writes a record to `events` before the head naming it, so
    // this high watermark is past everything the head knows (a final record included).
    const offsets = await port.offsets(topics.events, partition);
    const decision = decideResume({
      claim,
      log: logIdentity,
      partition,
      logStartOffset: offsets.logStartOffset,
      highWatermark: offsets.highWatermark,
      head,
    });
    // The resume decision as a span of its own, in the trace of the call it resumes (the head
    // carries it), linked to this request's own; only an id that verified can name that trace.
    const here = trace.getSpanContext(context.active());
    const resumeSpan = tidemarkTracer().startSpan(
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
      resumeSpan.setStatus({ code: SpanStatusCode.ERROR, message: decision.detail });
    if (decision.outcome === 'reset')
      resumeSpan.addEvent('tidemark.reset', { 'tidemark.reset.reason': decision.reason });
    resumeSpan.end();
    recordResume(decision.outcome, decision.reason);
    if (decision.outcome === 'invalid') {
      res.status(WireAnswers.invalid.httpStatus).json(invalidResumeBody(decision.reason));
      return;
    }
    const stream = decision.stream;
    const sse = openSse(res, { 'Mcp-Session-Id': session });
    if (decision.outcome === 'reset')
      sse.event(undefined, resetNotification(decision.reason, decision.generation));
    const plan = decision.plan;
    if (plan.kind === 'none') return sse.end();
    if (plan.kind === 'final') {
      const id = encodeEventId(
        {
          log: logIdentity,
          partition,
          offset: plan.terminal.offset,
          generation: plan.generation,
          seq: plan.terminal.seq,
          stream,
        },
        session,
        keyring,
      );
      if (plan.terminal.payload !== undefined) sse.event(id, plan.terminal.payload);
      return sse.end();
    }
    const cursor = new StreamCursor<unknown>({
      generation: plan.generation,
      nextSeq: plan.nextSeq,
      clientHasEvents: plan.clientHasEvents,
      fromOffset: plan.fromOffset,
      terminal: plan.terminal,
    });
    deliverStream(sse, session, stream, partition, cursor, plan.fromOffset, {
      caughtUpAt: offsets.highWatermark,
      terminal: plan.terminal,
      replay: true,
    });
  }

  async function handleDelete(req: Request, res: Response): Promise<void> {
    if (refuseModern(req, res)) return;
    const auth = await authenticate(req, res);
    if (auth === null) return;
    const found = await findSession(req, res, auth);
    if (found === undefined) return;
    await sessions.end(found.id);
    // The worker that owns the session cancels its running calls (their streams end, on every
    // replica); this replica's open streams of the session end now.
    await produce(
      found.id,
      [{ jsonrpc: '2.0', method: SESSION_ENDED_METHOD }],
      [[CONTROL_HEADER, SESSION_ENDED]],
    );
    for (const sse of bySession.get(found.id) ?? []) sse.end();
    res.status(200).end();
  }

  /** undefined: no auth configured; null: answered (401, or 429 past the rate limit). */
  async function authenticate(req: Request, res: Response): Promise<AuthResult | undefined | null> {
    const result = await authenticateOnly(req, res);
    if (result === null) return null;
    // By subject; without authentication by address, except this machine's own clients.
    const address = req.socket.remoteAddress ?? '';
    if (result === undefined && LOOPBACK_ADDRESSES.has(address)) return result;
    const key = result?.subject ?? `address:${address}`;
    try {
      await limiter.consume(key);
      return result;
    } catch (rejection) {
      const waitMs = (rejection as { msBeforeNext?: number }).msBeforeNext ?? 1_000;
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil(waitMs / 1000))));
      jsonError(
        res,
        429,
        -32000,
        'Too many requests: slow down and retry after Retry-After',
        'rate-limit',
      );
      return null;
    }
  }

  async function authenticateOnly(
    req: Request,
    res: Response,
  ): Promise<AuthResult | undefined | null> {
    if (options.authenticate === undefined) return undefined;
    const result = await options.authenticate(req);
    if (result === undefined) {
      res.setHeader(
        'WWW-Authenticate',
        metadataUrl === undefined ? 'Bearer' : `Bearer resource_metadata="${metadataUrl}"`,
      );
      jsonError(res, 401, -32000, 'Unauthorized', 'unauthorized');
      return null;
    }
    return result;
  }

  async function findSession(req: Request, res: Response, auth: AuthResult | undefined) {
    const header = req.headers['mcp-session-id'];
    if (header === undefined) {
      jsonError(
        res,
        WireAnswers.missingSession.httpStatus,
        WireAnswers.missingSession.jsonRpcCode,
        WireAnswers.missingSession.message,
      );
      return undefined;
    }
    const id = parseSessionId(Array.isArray(header) ? (header[0] ?? '') : header);
    const record = id === undefined ? undefined : await sessions.get(id);
    // Another subject's session is answered exactly like an unknown one.
    if (record === undefined || (auth !== undefined && record.subject !== auth.subject)) {
      jsonError(
        res,
        WireAnswers.unknownSession.httpStatus,
        WireAnswers.unknownSession.jsonRpcCode,
        WireAnswers.unknownSession.message,
      );
      return undefined;
    }
    return record;
  }

  function protocolVersionOf(req: Request, res: Response, negotiated: string): string | undefined {
    const header = req.headers['mcp-protocol-version'];
    // Without the header a server assumes 2025-03-26 (the spec's rule for older clients).
    const version =
      header === undefined ? (negotiated !== '' ? negotiated : '2025-03-26') : String(header);
    if (!(LEGACY_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
      jsonError(
        res,
        400,
        -32000,
        `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(version).slice(0, 64)} (supported: ${LEGACY_PROTOCOL_VERSIONS.join(', ')})`,
      );
      return undefined;
    }
    return version;
  }

  async function produce(
    session: SessionId,
    messages: readonly JsonRpcMessage[],
    headers: Array<[string, string]> = [],
    parent: Context = context.active(),
  ): Promise<void> {
    const partition = partitionForSession(session, partitionCount);
    const span = tidemarkTracer().startSpan(
      `send ${topics.requests}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          [ATTR_MESSAGING_SYSTEM]: 'kafka',
          [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
          [ATTR_MESSAGING_DESTINATION_NAME]: topics.requests,
          [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(partition),
        },
      },
      parent,
    );
    // The worker continues this trace from the record headers.
    const traced = [...headers, ...traceHeaders(trace.setSpan(parent, span))];
    try {
      await port.append(
        topics.requests,
        messages.map((message) => ({
          partition,
          key: session,
          value: Buffer.from(JSON.stringify(message)),
          headers: traced,
        })),
      );
    } finally {
      span.end();
    }
  }

  /** The span of one MCP request at the gateway, from the POST to the end of its response stream. */
  function requestSpan(
    session: SessionId,
    request: JsonRpcMessage & { id: RequestId },
  ): { span: Span; ctx: Context } {
    const method = String(request.method);
    const tool =
      method === 'tools/call'
        ? (request.params as { name?: unknown } | undefined)?.name
        : undefined;
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
   * Where a new request's stream will be: every record of it comes after the partition's high
   * watermark of now, so it is read from there, from seq 1.
   */
  async function newStream(key: SessionId, requestId: RequestId) {
    const partition = partitionForSession(key, partitionCount);
    const { highWatermark } = await port.offsets(topics.events, partition);
    const cursor = new StreamCursor<unknown>({
      generation: undefined,
      nextSeq: 1,
      clientHasEvents: false,
      fromOffset: highWatermark,
    });
    return { partition, stream: requestStreamId(requestId), highWatermark, cursor };
  }

  /**
   * Delivers a stream from the log to an SSE response through this gateway's shared tails. A new
   * stream is caught up at once (`caughtUpAt` = its start); a resumed one when the read reaches
   * the high watermark seen at the decision.
   */
  function deliverStream(
    sse: SseStream,
    session: SessionId,
    stream: StreamId,
    partition: number,
    cursor: StreamCursor<unknown>,
    fromOffset: bigint,
    extra: Partial<
      Pick<
        Parameters<typeof deliver>[0],
        'eventIds' | 'onEnd' | 'caughtUpAt' | 'terminal' | 'replay'
      >
    > = {},
  ): void {
    deliver({
      session,
      stream,
      partition,
      log: logIdentity,
      keyring,
      tails,
      sse,
      fromOffset,
      cursor,
      caughtUpAt: fromOffset,
      terminal: undefined,
      ...extra,
    });
  }

  /** Tells the workers which sessions have open streams here (they do not expire meanwhile). */
  async function touchOpenSessions(): Promise<void> {
    const records = [...bySession.keys()].map((session) => ({
      partition: partitionForSession(session, partitionCount),
      key: session,
      value: Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: CONTROL_METHOD })),
      headers: [[CONTROL_HEADER, SESSION_TOUCHED]] as Array<[string, string]>,
    }));
    if (records.length > 0) await port.append(topics.requests, records);
  }

  /** Answers 429 when a session already has as many open streams here as it may. */
  function tooManyStreams(session: SessionId, res: Response): boolean {
    if ((bySession.get(session)?.size ?? 0) < o.maxStreamsPerSession) return false;
    jsonError(
      res,
      429,
      -32000,
      `Too many open streams in this session (limit ${o.maxStreamsPerSession}); close one first`,
      'streams-per-session',
    );
    return true;
  }

  function openSse(res: Response, headers: Record<string, string>): SseStream {
    const sse = new SseStream(res, sseOptions, headers);
    open.add(sse);
    const session = headers['Mcp-Session-Id'] as SessionId | undefined;
    if (session !== undefined) {
      const streams = bySession.get(session) ?? new Set<SseStream>();
      bySession.set(session, streams.add(sse));
    }
    recordLiveStreams(1);
    void sse.closed.then(() => {
      open.delete(sse);
      if (session !== undefined) {
        const streams = bySession.get(session);
        streams?.delete(sse);
        if (streams?.size === 0) bySession.delete(session);
      }
      recordLiveStreams(-1);
    });
    return sse;
  }

  return {
    app,
    get openStreams() {
      return open.size;
    },
    listen: (listenPort, host) =>
      new Promise((resolve, reject) => {
        door.listeningOn(host);
        // A client trickling its headers or body is answered 408 and let go (checked at least
        // every second); SSE responses are not requests being received, so they are not cut.
        const server = createServer(
          {
            headersTimeout: o.headersTimeoutMs,
            requestTimeout: o.requestTimeoutMs,
            connectionsCheckingInterval: Math.min(1_000, o.headersTimeoutMs),
          },
          app,
        );
        server.maxConnections = o.maxConnections;
        server.once('error', reject);
        server.listen(listenPort, host, () => {
          server.off('error', reject);
          resolve(server);
        });
        servers.add(server);
      }),
    drain: async () => {
      draining = true;
      clearInterval(touchTimer);
      for (const server of servers) server.close();
      for (const sse of open) sse.end(o.retryMs);
      tails.close();
      await Promise.all(
        [...servers].map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
      );
    },
  };
}

function stepOf(
  cursor: StreamCursor<unknown>,
  record: {
    offset: bigint;
    headers: ReadonlyArray<readonly [string, string]>;
    value: Uint8Array | null;
  },
  stream: StreamId,
) {
  const stamp = decodeStampSafe(record.headers);
  if (stamp === undefined || stamp.stream !== stream) return undefined;
  let payload: unknown;
  try {
    payload = record.value === null ? undefined : JSON.parse(Buffer.from(record.value).toString());
  } catch {
    return undefined;
  }
  return cursor.accept({
    offset: record.offset,
    stamp,
    ...(payload === undefined ? {} : { payload }),
  });
}

function decodeStampSafe(headers: ReadonlyArray<readonly [string, string]>) {
  const decoded = decodeStamp(headers);
  return decoded.ok ? decoded.stamp : undefined;
}

const MODERN_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

function isModernVersion(value: unknown): boolean {
  return typeof value === 'string' && value >= '2026-07-28';
}

/** A request of the modern lane names its revision in a header or in its `_meta` envelope. */
function looksModern(req: Request, body: unknown): boolean {
  if (isModernVersion(req.headers['mcp-protocol-version'])) return true;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } } | undefined)?.params
    ?._meta;
  return (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    meta !== undefined &&
    MODERN_VERSION_META_KEY in meta
  );
}

function optionalHeader<K extends string>(
  name: K,
  value: string | string[] | undefined,
): Partial<Record<K, string>> {
  const single = Array.isArray(value) ? value[0] : value;
  return single === undefined ? {} : ({ [name]: single } as Record<K, string>);
}

function isRequest(message: JsonRpcMessage): message is JsonRpcMessage & { id: RequestId } {
  return (
    typeof message.method === 'string' &&
    (typeof message.id === 'string' || typeof message.id === 'number')
  );
}
