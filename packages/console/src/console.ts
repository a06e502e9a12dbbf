import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import {
  isLoopbackHost,
  isLoopbackOrigin,
  LOOPBACK_ADDRESSES,
  parseSessionId,
  parseStreamId,
  type SessionId,
} from '@tidemark/protocol';
import { compileConsoleOptions, type ConsoleOptions } from './console-options.js';
import { LiveTail, type TailItem } from './live-tail.js';
import { LogView } from './log-view.js';
import type { Visibility } from './visibility.js';
import { callPage } from './call-page.js';
import { loginPage, notFoundPage, overviewPage, sessionPage, type PageContext } from './pages.js';
import { recentSections } from './recent-pages.js';
import type { JournalEntry, ResumeJournal } from './resume-journal.js';
import type { Html } from './html.js';

export interface Console {
  /** Mount at `basePath`: `app.use(console.basePath, console.router)`. */
  readonly router: express.Router;
  readonly basePath: string;
  /** Ends live tails and their readers. */
  close(): void;
}

const ASSETS = fileURLToPath(new URL('../assets/', import.meta.url));
const COOKIE = 'tidemark_console_token';

/**
 * A read-only web console over a Tidemark log. It answers only this machine (loopback peers, a
 * loopback `Host` — a page that rebinds its domain to 127.0.0.1 is refused) and, with
 * authentication on, only a bearer token the endpoint would accept. It never writes to the log.
 */
export async function createConsole(given: ConsoleOptions): Promise<Console> {
  const options = compileConsoleOptions(given);
  const { basePath } = options;
  const onError =
    options.onError ?? ((error: unknown) => process.stderr.write(`console: ${String(error)}\n`));
  const partitionCount = await options.log.partitionCount(options.topics.events);
  const view = new LogView({
    log: options.log,
    topics: options.topics,
    partitionCount,
    sessionTtlMs: options.sessionTtlMs,
    scanRecords: options.scanRecords,
    maxSessions: options.maxSessions,
  });
  const tail = new LiveTail({
    log: options.log,
    topic: options.topics.events,
    partitionCount,
    onError,
  });
  const router = express.Router();
  const page = (): PageContext => ({
    base: basePath,
    source: options.source ?? 'the log',
    traceUrl: options.traceUrl,
    now: Date.now(),
  });
  const send = (res: Response, status: number, body: Html) =>
    void res.status(status).type('html').send(body.text);
  const guarded =
    (handler: (req: Request, res: Response, visibility: Visibility) => Promise<void>) =>
    (req: Request, res: Response, next: NextFunction) =>
      void (async () => {
        const visibility = await whoIs(options, req);
        if (visibility === undefined)
          return send(res, 401, loginPage(page(), req.method === 'POST'));
        await handler(req, res, visibility);
      })().catch(next);

  router.use(thisMachineOnly, securityHeaders);
  router.use('/assets', express.static(ASSETS, { index: false, fallthrough: false, maxAge: 0 }));
  loginRoute(router, { options, basePath, page, send });
  const live = new Set<Response>();
  pageRoutes(router, { options, view, tail, live, page, send, guarded });
  router.use((_req: Request, res: Response) =>
    send(res, 404, notFoundPage(page(), 'There is no such page.')),
  );
  router.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    // A client's mistake (an unknown asset, a malformed form) keeps its 4xx and is not logged.
    const status = (error as { status?: unknown } | null)?.status;
    if (typeof status === 'number' && status >= 400 && status < 500 && !res.headersSent)
      return send(
        res,
        status,
        notFoundPage(
          page(),
          status === 404 ? 'There is no such page.' : 'The request was refused.',
        ),
      );
    onError(error);
    if (res.headersSent) return void res.end();
    res.status(500).type('text').send('The console could not read the log; see the server log.');
  });
  return {
    router,
    basePath,
    close: () => {
      // Open live tails end, so the server they are on can close (a drain waits for them).
      for (const res of live) res.end();
      live.clear();
      tail.close();
    },
  };
}

/** The live tail as SSE: records (`event: record`) and resume decisions (`event: resume`). */
async function liveEvents(
  req: Request,
  res: Response,
  visibility: Visibility,
  { tail, view, journal, live }: LiveDeps,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  res.write(': live\n\n');
  live.add(res);
  const owners = new Map<string, Promise<boolean>>();
  const maySee = (session: string): Promise<boolean> => {
    if (visibility.all) return Promise.resolve(true);
    let known = owners.get(session);
    if (known === undefined) {
      if (owners.size >= 10_000) owners.clear(); // a tab open for days meets many sessions
      known = view.ownerOf(session as SessionId).then(
        (owner) => owner?.subject === visibility.subject,
        () => false,
      );
      owners.set(session, known);
    }
    return known;
  };
  // A page that cannot keep up (a busy log, a slow tab) skips records rather than have them
  // queue here without bound; it is told how many it skipped once its socket drains.
  let skipped = 0;
  res.on('drain', () => {
    if (skipped === 0) return;
    res.write(`event: skipped\ndata: ${JSON.stringify({ count: skipped })}\n\n`);
    skipped = 0;
  });
  const write = (event: string, data: TailItem | JournalEntry) =>
    void maySee(data.session).then((ok) => {
      if (!ok || res.writableEnded) return;
      if (res.writableNeedDrain) return void skipped++;
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    });
  let closed = false;
  const stops: Array<() => void> = [];
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  req.on('close', () => {
    closed = true;
    live.delete(res);
    clearInterval(keepAlive);
    for (const stop of stops) stop();
  });
  const stopTail = await tail.listen((item) => write('record', item));
  stops.push(stopTail);
  if (journal !== undefined) stops.push(journal.listen((entry) => write('resume', entry)));
  // The page left while the tail was starting.
  if (closed) for (const stop of stops) stop();
}

/** Who is asking: everyone when the endpoint has no authentication, else the token's subject. */
async function whoIs(options: ConsoleOptions, req: Request): Promise<Visibility | undefined> {
  if (options.authenticate === undefined) return { all: true };
  if (req.headers.authorization === undefined) {
    const token = cookieOf(req.headers.cookie, COOKIE);
    if (token !== undefined) req.headers.authorization = `Bearer ${token}`;
  }
  const auth = await options.authenticate(req);
  return auth === undefined ? undefined : { all: false, subject: auth.subject };
}

/** A cookie's value; a malformed one (bad percent-encoding, not a token) is no cookie: a 401, not a 500. */
function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key !== name) continue;
    try {
      const token = decodeURIComponent(value.join('='));
      return /^[A-Za-z0-9\-._~+/]+=*$/.test(token) ? token : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Loopback peers only, and a loopback `Host` (DNS rebinding): the console is for this machine. */
function thisMachineOnly(req: Request, res: Response, next: NextFunction): void {
  if (
    !LOOPBACK_ADDRESSES.has(req.socket.remoteAddress ?? '') ||
    !isLoopbackHost(req.headers.host ?? '')
  )
    return void res
      .status(403)
      .type('text')
      .send(
        'The console answers this machine only (a loopback address and Host). Use an SSH tunnel or kubectl port-forward.',
      );
  next();
}

/** A form post from another origin is refused: the sign-in cannot be driven by another site. */
function sameOrigin(req: Request, res: Response, next: NextFunction): void {
  const origin = req.headers.origin;
  if (origin !== undefined && !isLoopbackOrigin(origin))
    return void res.status(403).type('text').send('Cross-origin form posts are refused.');
  next();
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set({
    'content-security-policy':
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer a form post's Origin is "null".
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
  next();
}

interface LiveDeps {
  readonly tail: LiveTail;
  readonly view: LogView;
  readonly journal: ResumeJournal | undefined;
  /** The open live-tail responses, ended by `close`. */
  readonly live: Set<Response>;
}

interface RouteDeps {
  readonly options: ConsoleOptions;
  readonly page: () => PageContext;
  readonly send: (res: Response, status: number, body: Html) => void;
}

/** The sign-in form's post: a token the endpoint accepts becomes an HttpOnly, SameSite cookie. */
function loginRoute(
  router: express.Router,
  { options, basePath, page, send }: RouteDeps & { basePath: string },
): void {
  router.post(
    '/login',
    sameOrigin,
    express.urlencoded({ extended: false, limit: '8kb' }),
    (req, res, next) => {
      const token = (req.body as { token?: unknown } | undefined)?.token;
      if (typeof token !== 'string' || options.authenticate === undefined)
        return void res.redirect(303, basePath);
      req.headers.authorization = `Bearer ${token}`;
      void whoIs(options, req)
        .then((visibility) => {
          if (visibility === undefined) return send(res, 401, loginPage(page(), true));
          res.cookie(COOKIE, token, { httpOnly: true, sameSite: 'strict', path: basePath });
          res.redirect(303, basePath);
        })
        .catch(next);
    },
  );
}

/** The overview, a session, a call, and the live tail's event stream. */
function pageRoutes(
  router: express.Router,
  {
    options,
    view,
    tail,
    live,
    page,
    send,
    guarded,
  }: RouteDeps &
    Omit<LiveDeps, 'journal'> & {
      guarded: (
        handler: (req: Request, res: Response, visibility: Visibility) => Promise<void>,
      ) => (req: Request, res: Response, next: NextFunction) => void;
    },
): void {
  router.get(
    '/',
    guarded(async (req, res, visibility) => {
      const sessions = await view.listSessions(visibility);
      const resumes = options.journal
        ?.recent()
        .filter((entry) => sessions.some((s) => s.id === entry.session) || visibility.all);
      const recent = await view.recentActivity(visibility);
      const mcp = options.mcp && {
        endpoint: `${req.protocol}://${req.get('host') ?? 'localhost'}${options.mcp.path}`,
        tools: options.mcp.tools(),
      };
      const ctx = { ...page(), mcp };
      send(res, 200, overviewPage(ctx, sessions, resumes, recentSections(ctx, recent, sessions)));
    }),
  );
  router.get(
    '/sessions/:id',
    guarded(async (req, res, visibility) => {
      const id = parseSessionId(String(req.params['id']));
      const found = id === undefined ? undefined : await view.session(id, visibility);
      if (found === undefined)
        return send(
          res,
          404,
          notFoundPage(page(), 'No such session or task (it may have expired).'),
        );
      send(res, 200, sessionPage(page(), found.session, found.calls));
    }),
  );
  router.get(
    '/sessions/:id/calls/:stream',
    guarded(async (req, res, visibility) => {
      const id = parseSessionId(String(req.params['id']));
      const stream = parseStreamId(String(req.params['stream']));
      const call =
        id === undefined || stream === undefined
          ? undefined
          : await view.call(id, stream, visibility);
      if (call === undefined)
        return send(res, 404, notFoundPage(page(), 'No such call in this session.'));
      send(res, 200, callPage(page(), call));
    }),
  );
  router.get(
    '/events',
    guarded((req, res, visibility) =>
      liveEvents(req, res, visibility, { tail, view, journal: options.journal, live }),
    ),
  );
}
