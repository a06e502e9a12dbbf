import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response } from 'express';
import { compileConsoleOptions, type ConsoleOptions } from './console-options.js';
import { securityHeaders, thisMachineOnly, whoIs } from './console-guards.js';
import { pageRoutes } from './console-routes.js';
import { LiveTail } from './live-tail.js';
import { LogView } from './log-view.js';
import type { Visibility } from './visibility.js';
import { loginPage, notFoundPage, type PageContext } from './pages.js';
import type { Html } from './html.js';
import { loginRoute } from './sign-in.js';

export interface Console {
  /** Mount at `basePath`: `app.use(console.basePath, console.router)`. */
  readonly router: express.Router;
  readonly basePath: string;
  /** Ends live tails and their readers. */
  close(): void;
}

const ASSETS = fileURLToPath(new URL('../assets/', import.meta.url));

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
