import type { SessionSummary } from './log-view.js';
import { html, type Html } from './html.js';
import { shortId, time, type PageContext } from './pages.js';
import type { RecentActivity } from './recent-activity.js';

// The overview's view of what the sessions table cannot show: plain 2026-07-28 calls (the default
// lane of the official Python and Go clients) and sessions their clients ended.

export function recentSections(
  ctx: PageContext,
  recent: RecentActivity,
  sessions: readonly SessionSummary[],
): Html {
  const listed = new Set(sessions.map((s) => s.id));
  const ended = recent.endedSessions.filter((s) => !listed.has(s.id));
  return html`<section aria-labelledby="calls-title">
      <h2 id="calls-title">Recent 2026-07-28 calls</h2>
      ${
        recent.statelessCalls.length === 0
          ? html`<p class="empty">
              None lately: calls without a session (protocol 2026-07-28) are listed here.
            </p>`
          : html`<table class="calls" data-testid="stateless-calls">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Subject</th>
                  <th scope="col">Key</th>
                </tr>
              </thead>
              <tbody>
                ${recent.statelessCalls.map(
                  (call) =>
                    html`<tr>
                      <td>${time(call.atMs, ctx.now)}</td>
                      <td><code>${call.tool}</code></td>
                      <td>${call.subject ?? '—'}</td>
                      <td class="mono">${shortId(call.key)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`
      }
    </section>
    ${
      ended.length === 0
        ? html``
        : html`<section aria-labelledby="ended-title">
            <h2 id="ended-title">Ended sessions</h2>
            <table class="ended" data-testid="ended-sessions">
              <thead>
                <tr>
                  <th scope="col">Id</th>
                  <th scope="col">Ended</th>
                </tr>
              </thead>
              <tbody>
                ${ended.map(
                  (s) =>
                    html`<tr>
                      <td class="mono">${shortId(s.id)}</td>
                      <td>ended ${time(s.atMs, ctx.now)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </section>`
    }`;
}
