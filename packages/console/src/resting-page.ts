import type { WaitingStep } from '@tidemark/log';
import { html, type Html } from './html.js';
import { layout, shortId, time, type PageContext } from './pages.js';

// The calls resting in the log — asleep (`ex.sleep`) or waiting for a signal (`ex.signal`) —
// with their wake time or expiry, the soonest first: what an operator looks at before a
// `tidemark calls wake|cancel`. Everyone's calls: shown only to a viewer who sees everything.

export function restingPage(ctx: PageContext, resting: readonly WaitingStep[] | undefined): Html {
  const body =
    resting === undefined
      ? html`<p class="empty">Every subject's calls are here: this page is for operators.</p>`
      : resting.length === 0
        ? html`<p class="empty">No call is asleep or waiting for a signal now.</p>`
        : html`<table class="calls" data-testid="resting-calls">
            <thead>
              <tr>
                <th scope="col">Call</th>
                <th scope="col">Waits</th>
                <th scope="col">Since</th>
                <th scope="col">Until</th>
                <th scope="col">Owner · journal (for tidemark calls)</th>
              </tr>
            </thead>
            <tbody>
              ${resting.map(
                (call) =>
                  html`<tr>
                    <td>
                      <a href="${ctx.base}/sessions/${call.owner}/calls/${call.journal}"
                        >${shortId(call.owner)} · ${call.journal}</a
                      >
                    </td>
                    <td>
                      ${call.kind === 'sleep' ? 'asleep' : 'for signal'} <code>${call.name}</code>
                    </td>
                    <td>${time(call.sinceMs, ctx.now)}</td>
                    <td>
                      ${
                        call.untilMs === undefined
                          ? 'no expiry'
                          : html`${call.kind === 'sleep' ? 'wakes' : 'expires'}
                            ${time(call.untilMs, ctx.now)}`
                      }
                    </td>
                    <td class="mono">${call.owner} ${call.journal}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`;
  return layout(
    ctx,
    'Resting calls',
    html`<h1>Resting calls</h1>
      ${body}`,
  );
}
