import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { parseSessionId, parseStreamId } from '@tidemark/protocol';
import type { ConsoleOptions } from './console-options.js';
import { callPage } from './call-page.js';
import { eventsPage, readSubscriptions } from './events-page.js';
import type { Html } from './html.js';
import { liveEvents, type LiveDeps } from './live-events.js';
import { notFoundPage, overviewPage, sessionPage, type PageContext } from './pages.js';
import { recentSections } from './recent-pages.js';
import { restingPage } from './resting-page.js';
import { AUDIT_RECORDS, auditPage } from './audit-page.js';
import type { Visibility } from './visibility.js';

export interface RouteDeps {
  readonly options: ConsoleOptions;
  readonly page: () => PageContext;
  readonly send: (res: Response, status: number, body: Html) => void;
}

/** The overview, a session, a call, and the live tail's event stream. */
export function pageRoutes(
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
    '/subscriptions',
    guarded(async (_req, res, visibility) => {
      const rows = await readSubscriptions(options.log, options.topics, visibility);
      send(res, 200, eventsPage(page(), options.mcp?.events?.(), rows));
    }),
  );
  router.get('/resting', restingRoute(view, page, send, guarded));
  router.get('/audit', auditRoute(view, page, send, guarded));
  router.get(
    '/events',
    guarded((req, res, visibility) =>
      liveEvents(req, res, visibility, { tail, view, journal: options.journal, live }),
    ),
  );
}

/** The audit trail's latest calls (`auditPage`): a subject's own, or everyone's. */
function auditRoute(
  view: LiveDeps['view'],
  page: RouteDeps['page'],
  send: RouteDeps['send'],
  guarded: Parameters<typeof pageRoutes>[1]['guarded'],
) {
  return guarded(async (_req, res, visibility) =>
    send(res, 200, auditPage(page(), await view.audit(visibility, AUDIT_RECORDS), visibility.all)),
  );
}

/** The calls resting in the log (`restingPage`): everyone's, so for a viewer who sees all. */
function restingRoute(
  view: LiveDeps['view'],
  page: RouteDeps['page'],
  send: RouteDeps['send'],
  guarded: (
    handler: (req: Request, res: Response, visibility: Visibility) => Promise<void>,
  ) => (req: Request, res: Response, next: NextFunction) => void,
) {
  return guarded(async (_req, res, { all }) =>
    send(res, 200, restingPage(page(), all ? await view.resting() : undefined)),
  );
}
