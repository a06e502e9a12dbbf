import type { AuditRecord } from '@tidemark/protocol';
import { html, type Html } from './html.js';
import { layout, shortId, time, type PageContext } from './pages.js';

// The audit trail's latest calls, the last to end first: who called which tool, what came of it
// and why. A viewer signed in as a subject sees its own calls; a console without authentication
// (an operator's) sees everyone's. The export is `tidemark audit`.

/** Each partition's latest audit records the page reads at most. */
export const AUDIT_RECORDS = 500;

export function auditPage(ctx: PageContext, records: readonly AuditRecord[], all: boolean): Html {
  const body =
    records.length === 0
      ? html`<p class="empty">No call in the audit trail yet.</p>`
      : html`<table class="calls" data-testid="audit-records">
          <thead>
            <tr>
              <th scope="col">Ended</th>
              <th scope="col">Call</th>
              <th scope="col">Tool</th>
              <th scope="col">Subject · client · scopes</th>
              <th scope="col">Outcome</th>
              <th scope="col">Executions</th>
            </tr>
          </thead>
          <tbody>
            ${records.map(
              (record) =>
                html`<tr>
                  <td>${time(record.atMs, ctx.now)}</td>
                  <td>
                    <a href="${ctx.base}/sessions/${record.owner}/calls/${record.stream}"
                      >${shortId(record.owner)} · ${record.stream}</a
                    >
                  </td>
                  <td>
                    <code>${record.tool}</code>
                    ${record.module === undefined ? '' : html`<br /><small>${record.module}</small>`}
                  </td>
                  <td>
                    ${record.subject ?? 'anonymous'} · ${record.clientId ?? '—'} ·
                    ${(record.scopes ?? []).join(' ') || '—'}
                  </td>
                  <td>
                    ${record.outcome}${record.toolError === true ? ' (tool error)' : ''}
                    ${record.reason === undefined ? '' : html`<br /><small>${record.reason}</small>`}
                  </td>
                  <td>${String(record.executions)}</td>
                </tr>`,
            )}
          </tbody>
        </table>`;
  return layout(
    ctx,
    'Audit trail',
    html`<h1>Audit trail</h1>
      <p>${all ? "Every subject's calls" : 'Your calls'}, the last to end first.</p>
      ${body}`,
  );
}
