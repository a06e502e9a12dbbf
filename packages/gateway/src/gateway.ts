import { createServer, type Server } from 'node:http';
import { Server as NetServer } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { HttpRefusals, type HttpRefusal } from './http/http-refusals.js';
import type { Asker } from './auth/index.js';
import { serveResourceMetadata } from './auth/index.js';
import { createGatewayContext, type GatewayContext } from './gateway-context.js';
import { compileGatewayOptions, type GatewayOptions } from './gateway-options.js';
import { sendRefusal } from './http/http-answers.js';
import { LogDeadlineError } from './log-deadline.js';
import {
  accepts,
  bodyRefusal,
  declaresUtf8,
  frontDoor,
  isJson,
  NESTED_TOO_DEEP,
} from './http/http-guards.js';
import { nestsDeeperThan, parseInbound } from './http/inbound.js';
import { handleDelete, handleSessionPost } from './session-lane.js';
import { handleGet } from './session-resume.js';
import { installSignals } from './signals.js';
import {
  classifyStateless,
  handleStatelessPost,
  isStatelessRequest,
  looksStateless,
} from './stateless-lane.js';

export interface Gateway {
  readonly app: express.Express;
  /** Listens on `host:port` (port 0: any free one); resolves with the server. */
  listen(port: number, host: string): Promise<Server>;
  /**
   * SIGTERM: stop accepting; end resumable streams with a retry hint so clients resume elsewhere;
   * let the answers nobody can resume (2026-07-28 requests in flight) end, up to `drainTimeoutMs`.
   */
  drain(): Promise<void>;
  /** Live SSE streams now. */
  readonly openStreams: number;
  /** The partitions of `events` this gateway mints keys onto now (none: any; see `group`). */
  readonly keyPartitions: readonly number[];
}

/**
 * The stateless gateway: MCP Streamable HTTP for both lanes — the session lane (2025-03-26 …
 * 2025-11-25) and the stateless lane (2026-07-28). Everything that matters lives in the log —
 * sessions, requests, events, stream heads — so any replica serves any session and a client may
 * change replica on every request.
 *
 * @example
 * const gateway = await createGateway({ log, topics: topicNames(), keyring });
 * await gateway.listen(3000, '127.0.0.1');
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const compiled = compileGatewayOptions(options);
  const app = express();
  app.disable('x-powered-by');
  // Without trusted proxies, `req.ip` is the socket's address and X-Forwarded-For is ignored.
  app.set('trust proxy', compiled.trustedProxies ?? false);
  const metadataUrl = serveResourceMetadata(app, options.resourceMetadata);
  const ctx = await createGatewayContext(compiled, metadataUrl);
  if (compiled.group !== undefined)
    ctx.keys.join(compiled.group.groups, compiled.group.name, ctx.topics.events, ctx.onWarning);
  let draining = false;
  const door = frontDoor({
    path: compiled.path,
    allowedOrigins: compiled.allowedOrigins,
    allowedHosts: compiled.allowedHosts,
    isDraining: () => draining,
  });
  door.install(app);
  // Requests being handled: a drain waits for them as for the connections. A call that reaches a
  // draining replica is answered with its stream's priming event at once (its client resumes
  // elsewhere from there) while the request is still being written to the log; stopping before
  // the write ends would leave that client resuming a call no worker ever gets.
  const handling = new Set<Promise<void>>();
  installRoutes(app, ctx, handling);
  // A session whose client only listens sends no requests: its open streams keep it alive.
  const touchTimer = setInterval(
    () => void ctx.producer.touch(ctx.streams.sessions()).catch(ctx.onError),
    Math.max(100, Math.floor(compiled.sessionTtlMs / 3)),
  );
  touchTimer.unref();
  const servers = new Set<Server>();
  return {
    app,
    get openStreams() {
      return ctx.streams.size;
    },
    get keyPartitions() {
      return ctx.keys.partitions;
    },
    listen: async (port, host) => {
      door.listeningOn(host);
      const server = await listen(app, compiled, port, host);
      servers.add(server);
      return server;
    },
    drain: async () => {
      draining = true;
      clearInterval(touchTimer);
      const left = ctx.keys.leave().catch(ctx.onError);
      // No new connection; and none is closed under its client (a request written as it closes
      // fails at the client, with nothing to resume) — `http.Server#close` would close the idle
      // kept-alive ones at once, so the listener is closed as a `net.Server`. Every answer from now
      // on closes its connection, and an idle one expires on the keep-alive timeout, which clients
      // know from the Keep-Alive header and stop reusing before. A request in flight (an open
      // 2026-07-28 answer) holds its connection: none left means all were answered.
      const closed = Promise.all(
        [...servers].map(
          (server) =>
            new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve())),
        ),
      );
      ctx.streams.drain(compiled.retryMs);
      let timer: NodeJS.Timeout | undefined;
      // Once every connection is closed no request can begin: then the ones begun are waited for.
      const handled = async () => {
        while (handling.size > 0) await Promise.allSettled([...handling]);
      };
      await Promise.race([
        closed.then(handled),
        new Promise((resolve) => (timer = setTimeout(resolve, compiled.drainTimeoutMs))),
      ]);
      clearTimeout(timer);
      ctx.streams.endAll(compiled.retryMs);
      for (const server of servers) server.closeAllConnections();
      ctx.tails.close();
      await Promise.all([closed, left]);
    },
  };
}

function installRoutes(
  app: express.Express,
  ctx: GatewayContext,
  handling: Set<Promise<void>>,
): void {
  const { path, maxBodyBytes, maxJsonDepth } = ctx.options;
  // A declared length past the limit is refused before a byte of the body is read (body-parser
  // would read it all to its end first); the connection closes after the answer.
  app.post(path, (req, res, next) => {
    if (Number(req.headers['content-length'] ?? 0) <= maxBodyBytes) return next();
    sendRefusal(res, HttpRefusals.declaredBodyTooLarge(maxBodyBytes));
  });
  const handle =
    (handler: (ctx: GatewayContext, req: Request, res: Response) => Promise<void>) =>
    (req: Request, res: Response, next: NextFunction) => {
      const handled = handler(ctx, req, res).catch(next);
      handling.add(handled);
      void handled.finally(() => handling.delete(handled));
    };
  // Who asks is known from the headers: a stranger's body is never inflated nor parsed.
  app.post(
    path,
    (req, res, next) =>
      void admitPost(ctx, req, res)
        .then((admitted) => admitted && next())
        .catch(next),
  );
  const json = express.json({
    limit: maxBodyBytes, // of the inflated body: a small gzip cannot become a large one
    type: () => true,
    verify: (_req, _res, body) => {
      if (nestsDeeperThan(body, maxJsonDepth)) throw tooDeep();
    },
  });
  // Before the MCP endpoint's own routes: `<path>/signals/<token>` is not a JSON-RPC endpoint.
  installSignals(app, ctx, handle);
  app.post(path, json, handle(handlePost));
  app.get(path, handle(handleGetRequest));
  app.delete(path, handle(handleDeleteRequest));
  app.all(path, (_req, res) => sendRefusal(res, HttpRefusals.methodNotAllowed()));
  // One place that turns anything thrown into an answer: bad JSON, oversize bodies, log failures.
  // A client's mistake is a 4xx and not logged as a failure; only the server's own is a 5xx.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return void res.end();
    const refusal = bodyRefusal(error, maxBodyBytes, maxJsonDepth);
    if (refusal !== undefined) return sendRefusal(res, refusal);
    ctx.onError(error);
    const detail = error instanceof LogDeadlineError ? error.message : undefined;
    sendRefusal(res, HttpRefusals.logUnavailable(detail, idOf(req)));
  });
}

/** The id of a single request whose body was read, to answer it by. */
function idOf(req: Request): string | number | undefined {
  const body = req.body as { id?: unknown } | undefined;
  const id =
    typeof body === 'object' && body !== null && !Array.isArray(body) ? body.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** What body-parser's `verify` throws for a body nested too deep: a 400, never parsed. */
function tooDeep(): Error {
  return Object.assign(new Error('nested too deep'), { status: 400, type: NESTED_TOO_DEEP });
}

/**
 * A POST's headers: its media types, then who sends it. The asker is kept for the handler; a
 * refusal is answered here with the body unread.
 */
async function admitPost(ctx: GatewayContext, req: Request, res: Response): Promise<boolean> {
  if (!isJson(req.headers['content-type'])) return refused(res, HttpRefusals.contentType());
  if (!declaresUtf8(req.headers['content-type'])) return refused(res, HttpRefusals.charset());
  if (!['application/json', 'text/event-stream', '*/*'].some((type) => accepts(req, type)))
    return refused(res, HttpRefusals.acceptPost());
  // Authentication comes before either lane and before anything is written to the log.
  const access = await ctx.access.check(req);
  if (!access.ok) return refused(res, access.refusal);
  (res.locals as Locals).asker = access.value;
  return true;
}

interface Locals {
  asker: Asker;
}

function refused(res: Response, refusal: HttpRefusal): false {
  // The body stays unread: the connection is not kept for a next request behind it.
  res.setHeader('Connection', 'close');
  sendRefusal(res, refusal);
  return false;
}

async function handlePost(ctx: GatewayContext, req: Request, res: Response): Promise<void> {
  const { asker } = res.locals as Locals;
  const body = req.body as unknown;
  const inbound = parseInbound(body, {
    maxDepth: ctx.options.maxJsonDepth,
    maxBatch: ctx.options.maxBatchMessages,
  });
  if (!inbound.ok)
    return sendRefusal(res, HttpRefusals.invalidMessage(inbound.id, inbound.code, inbound.message));
  if (looksStateless(req, body)) {
    const classified = classifyStateless(req, body);
    if (!classified.ok) return sendRefusal(res, classified.refusal);
    if (classified.route.kind === 'modern')
      return handleStatelessPost(ctx, req, res, classified.route, asker);
  }
  return handleSessionPost(ctx, req, res, inbound, asker);
}

async function handleGetRequest(ctx: GatewayContext, req: Request, res: Response): Promise<void> {
  if (isStatelessRequest(req)) return sendRefusal(res, HttpRefusals.statelessHasNoSessions());
  if (!accepts(req, 'text/event-stream')) return sendRefusal(res, HttpRefusals.acceptGet());
  const access = await ctx.access.check(req);
  if (!access.ok) return sendRefusal(res, access.refusal);
  return handleGet(ctx, req, res, access.value);
}

async function handleDeleteRequest(
  ctx: GatewayContext,
  req: Request,
  res: Response,
): Promise<void> {
  if (isStatelessRequest(req)) return sendRefusal(res, HttpRefusals.statelessHasNoSessions());
  const access = await ctx.access.check(req);
  if (!access.ok) return sendRefusal(res, access.refusal);
  return handleDelete(ctx, req, res, access.value);
}

/**
 * A client trickling its headers or body is answered 408 and let go (checked at least every
 * second); SSE responses are not requests being received, so they are not cut.
 */
function listen(
  app: express.Express,
  options: GatewayContext['options'],
  port: number,
  host: string,
): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(
      {
        headersTimeout: options.headersTimeoutMs,
        requestTimeout: options.requestTimeoutMs,
        connectionsCheckingInterval: Math.min(1_000, options.headersTimeoutMs),
      },
      app,
    );
    server.maxConnections = options.maxConnections;
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
