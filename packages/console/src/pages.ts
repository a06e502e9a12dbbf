import type { CallSummary, SessionSummary } from './log-view.js';
import { html, type Html } from './html.js';
import type { JournalEntry } from './resume-journal.js';

// The console's pages: server-rendered, readable without script (the live tail needs it), one
// stylesheet and one small script served by the console itself. Colour is never the only signal:
// every generation also has its number, every outcome its word.

export interface PageContext {
  /** Where the console is mounted, e.g. `/console`. */
  readonly base: string;
  /** `tidemark dev` or `Kafka (read-only)`. */
  readonly source: string;
  /** A trace viewer URL with `{traceId}` in it. */
  readonly traceUrl: string | undefined;
  readonly now: number;
  /** The MCP endpoint beside this console and its tools (a gateway's own console only). */
  readonly mcp?: { readonly endpoint: string; readonly tools: readonly string[] } | undefined;
}

export function layout(ctx: PageContext, title: string, body: Html): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Tidemark console</title>
        <link rel="stylesheet" href="${ctx.base}/assets/console.css" />
        <script type="module" src="${ctx.base}/assets/console.js"></script>
      </head>
      <body data-base="${ctx.base}">
        <a class="skip" href="#main">Skip to content</a>
        <header>
          <a class="brand" href="${ctx.base}">Tidemark console</a>
          <span class="source">${ctx.source}</span>
          <nav aria-label="Console">
            <a href="${ctx.base}/subscriptions">Events</a>
            <a href="${ctx.base}/resting">Resting calls</a>
            <a href="${ctx.base}/audit">Audit trail</a>
          </nav>
        </header>
        <main id="main" tabindex="-1">${body}</main>
      </body>
    </html>`;
}

export function overviewPage(
  ctx: PageContext,
  sessions: readonly SessionSummary[],
  resumes: readonly JournalEntry[] | undefined,
  /** Sections after the sessions table (recent 2026-07-28 calls, ended sessions). */
  recent: Html,
): Html {
  return layout(
    ctx,
    'Overview',
    html`<h1>Sessions and tasks</h1>
      ${sessionsTable(ctx, sessions)} ${recent}
      <section aria-labelledby="resumes-title">
        <h2 id="resumes-title">Resume decisions</h2>
        ${
          resumes === undefined
            ? html`<p class="note">
                Resume decisions are kept by the gateway that made them: this console reads the log,
                which does not record them. See each gateway's <code>mcp.resume</code> spans and the
                <code>tidemark.resume</code> metric.
              </p>`
            : resumesTable(ctx, resumes)
        }
      </section>
      <section aria-labelledby="tail-title" class="tail">
        <h2 id="tail-title">Live tail</h2>
        <p class="note" id="tail-state">
          Records appear here as they are written to <code>events</code>.
        </p>
        <ol
          id="tail"
          class="tail-list"
          aria-live="polite"
          aria-relevant="additions"
          data-testid="live-tail"
        ></ol>
      </section>`,
  );
}

function sessionsTable(ctx: PageContext, sessions: readonly SessionSummary[]): Html {
  if (sessions.length === 0) return emptyState(ctx);
  return html`<table class="sessions" data-testid="sessions">
    <caption>
      Most recently active first
    </caption>
    <thead>
      <tr>
        <th scope="col">Id</th>
        <th scope="col">Kind</th>
        <th scope="col">Subject</th>
        <th scope="col">Protocol</th>
        <th scope="col">Created</th>
        <th scope="col">Last activity</th>
        <th scope="col">Expires</th>
        <th scope="col">Streams</th>
      </tr>
    </thead>
    <tbody>
      ${sessions.map(
        (s) =>
          html`<tr>
            <td>
              <a class="mono" href="${ctx.base}/sessions/${encodeURIComponent(s.id)}"
                >${shortId(s.id)}</a
              >
            </td>
            <td>${s.kind}</td>
            <td>${s.subject ?? '—'}</td>
            <td>${s.protocolVersion}</td>
            <td>${time(s.createdAtMs, ctx.now)}</td>
            <td>${time(s.lastActivityMs, ctx.now)}</td>
            <td>${s.expiresAtMs === undefined ? '—' : time(s.expiresAtMs, ctx.now)}</td>
            <td>${s.streams}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** No sessions yet: where the MCP endpoint is and what it serves, when this console knows. */
function emptyState(ctx: PageContext): Html {
  if (ctx.mcp === undefined)
    return html`<p class="empty">No sessions yet. Connect a client to the MCP endpoint.</p>`;
  return html`<p class="empty" data-testid="empty-state">
    No sessions yet. Connect an MCP client to <code>${ctx.mcp.endpoint}</code>; it serves
    ${
      ctx.mcp.tools.length === 0
        ? html`no tools`
        : html`${ctx.mcp.tools.map((tool, i) => html`${i === 0 ? '' : ', '}<code>${tool}</code>`)}`
    }.
  </p>`;
}

function resumesTable(ctx: PageContext, resumes: readonly JournalEntry[]): Html {
  if (resumes.length === 0)
    return html`<p class="empty">
      No resumes yet: a client that reconnects with <code>Last-Event-ID</code> shows up here.
    </p>`;
  return html`<table class="resumes" data-testid="resumes">
    <thead>
      <tr>
        <th scope="col">When</th>
        <th scope="col">Session</th>
        <th scope="col">Stream</th>
        <th scope="col">Outcome</th>
        <th scope="col">Reason</th>
        <th scope="col">Client had → now</th>
        <th scope="col">Replica</th>
      </tr>
    </thead>
    <tbody>
      ${resumes.map(
        (r) =>
          html`<tr>
            <td>${time(r.atMs, ctx.now)}</td>
            <td>
              <a class="mono" href="${ctx.base}/sessions/${encodeURIComponent(r.session)}"
                >${shortId(r.session)}</a
              >
            </td>
            <td class="mono">
              ${r.stream === undefined ? '—' : html`<a href="${ctx.base}/sessions/${encodeURIComponent(r.session)}/calls/${encodeURIComponent(r.stream)}">${r.stream}</a>`}
            </td>
            <td><span class="outcome outcome-${r.outcome}">${r.outcome}</span></td>
            <td>
              ${r.reason}${r.detail === undefined ? '' : html`<div class="detail">${r.detail}</div>`}
            </td>
            <td class="mono">${r.claimedGeneration ?? '—'} → ${r.generation ?? '—'}</td>
            <td>${r.replica}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

export function sessionPage(
  ctx: PageContext,
  session: SessionSummary,
  calls: readonly CallSummary[],
): Html {
  return layout(
    ctx,
    `Session ${shortId(session.id)}`,
    html`<nav aria-label="Breadcrumb"><a href="${ctx.base}">Overview</a> › ${session.kind}</nav>
      <h1>
        ${session.kind === 'task' ? 'Task' : 'Session'} <span class="mono">${session.id}</span>
      </h1>
      <dl class="facts">
        <dt>Subject</dt>
        <dd>${session.subject ?? '— (no authentication)'}</dd>
        <dt>Protocol</dt>
        <dd>${session.protocolVersion}</dd>
        <dt>Created</dt>
        <dd>${time(session.createdAtMs, ctx.now)}</dd>
        <dt>Last activity</dt>
        <dd>${time(session.lastActivityMs, ctx.now)}</dd>
        ${
          session.expiresAtMs === undefined
            ? ''
            : html`<dt>Expires if idle</dt>
                <dd>${time(session.expiresAtMs, ctx.now)}</dd>`
        }
      </dl>
      <h2>Calls</h2>
      ${
        calls.length === 0
          ? html`<p class="empty">No streams yet.</p>`
          : html`<table class="calls" data-testid="calls">
              <thead>
                <tr>
                  <th scope="col">Call</th>
                  <th scope="col">Stream</th>
                  <th scope="col">Generation</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Events</th>
                  <th scope="col">State</th>
                  <th scope="col">Trace</th>
                </tr>
              </thead>
              <tbody>
                ${calls.map(
                  (c) =>
                    html`<tr>
                      <td>
                        <a
                          href="${ctx.base}/sessions/${encodeURIComponent(session.id)}/calls/${encodeURIComponent(c.stream)}"
                          >${c.label}</a
                        >
                      </td>
                      <td class="mono">${c.stream}</td>
                      <td class="mono">${c.generation}</td>
                      <td>
                        ${c.attempt}${c.cause === 'first' ? '' : html` <span class="cause">(${c.cause})</span>`}
                      </td>
                      <td>${c.lastSeq}</td>
                      <td>${c.finished ? 'finished' : 'running'}</td>
                      <td>${traceLink(ctx, c.traceId)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }`,
  );
}

export function loginPage(ctx: PageContext, failed: boolean): Html {
  return layout(
    ctx,
    'Sign in',
    html`<h1>Sign in</h1>
      <p>
        This console uses the MCP endpoint's authentication: paste a bearer token it accepts. You
        see the sessions of its subject.
      </p>
      ${failed ? html`<p class="error" role="alert">That token was not accepted.</p>` : ''}
      <form method="post" action="${ctx.base}/login">
        <label for="token">Bearer token</label>
        <input id="token" name="token" type="password" autocomplete="off" required />
        <button type="submit">Sign in</button>
      </form>`,
  );
}

export function notFoundPage(ctx: PageContext, what: string): Html {
  return layout(
    ctx,
    'Not found',
    html`<h1>Not found</h1>
      <p>${what}</p>
      <p><a href="${ctx.base}">Back to the overview</a></p>`,
  );
}

export function traceLink(ctx: PageContext, traceId: string | undefined): Html | string {
  if (traceId === undefined) return '—';
  if (ctx.traceUrl === undefined) return html`<span class="mono trace">${traceId}</span>`;
  return html`<a class="mono trace" href="${ctx.traceUrl.replace('{traceId}', traceId)}"
    >${traceId}</a
  >`;
}

export function shortId(id: string): string {
  return id.length > 14 ? `${id.slice(0, 12)}…` : id;
}

/** An ISO time, with how long ago (or ahead) in words, in a <time> element. */
export function time(atMs: number, now: number): Html {
  const iso = new Date(atMs).toISOString();
  const seconds = Math.round((atMs - now) / 1000);
  const magnitude = Math.abs(seconds);
  const span =
    magnitude < 90
      ? `${magnitude} s`
      : magnitude < 5400
        ? `${Math.round(magnitude / 60)} min`
        : `${Math.round(magnitude / 3600)} h`;
  return html`<time datetime="${iso}" title="${iso}"
    >${seconds <= 0 ? `${span} ago` : `in ${span}`}</time
  >`;
}
