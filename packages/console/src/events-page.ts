import { EventRegistry, type DeliveryState, type WebhookSubscription } from '@tidemark/log';
import type { LogPort, TopicNames } from '@tidemark/protocol';
import { html, type Html } from './html.js';
import { layout, shortId, time, type PageContext } from './pages.js';
import type { Visibility } from './visibility.js';

// The Events extension in the console: the event types this endpoint offers, and every webhook
// subscription in the log (a subject's own, with authentication) with where its deliveries
// stand — how many, the last one, and since when and why they fail.

export interface SubscriptionRow {
  readonly subscription: WebhookSubscription;
  readonly delivery: DeliveryState | undefined;
}

/**
 * The subscriptions of every partition of `subscriptions`, as the viewer may see them; undefined
 * when the log has no such topic.
 */
export async function readSubscriptions(
  log: LogPort,
  topics: TopicNames,
  visibility: Visibility,
): Promise<SubscriptionRow[] | undefined> {
  // A deployment from before the Events extension has no such topic until `topics create` runs.
  const partitionCount = await log.partitionCount(topics.subscriptions).catch(() => undefined);
  if (partitionCount === undefined) return undefined;
  const registry = new EventRegistry({ port: log, topic: topics.subscriptions, partitionCount });
  const rows: SubscriptionRow[] = [];
  for (let partition = 0; partition < partitionCount; partition++)
    for (const subscription of await registry.subscriptions(partition))
      if (visibility.all || subscription.subject === visibility.subject)
        rows.push({ subscription, delivery: await registry.deliveryState(subscription) });
  return rows.sort((a, b) => b.subscription.createdAtMs - a.subscription.createdAtMs);
}

export function eventsPage(
  ctx: PageContext,
  types: readonly string[] | undefined,
  rows: readonly SubscriptionRow[] | undefined,
): Html {
  return layout(
    ctx,
    'Events',
    html`<h1>Events</h1>
      <section aria-labelledby="types-title">
        <h2 id="types-title">Event types</h2>
        ${
          types === undefined
            ? html`<p class="note">
                The event types are the workers' modules': this console reads the log, which does
                not list them. Ask any gateway with <code>events/list</code>.
              </p>`
            : types.length === 0
              ? html`<p class="empty">No tool module offers event types.</p>`
              : html`<ul data-testid="event-types">
                  ${types.map((type) => html`<li><code>${type}</code></li>`)}
                </ul>`
        }
      </section>
      <section aria-labelledby="subscriptions-title">
        <h2 id="subscriptions-title">Webhook subscriptions</h2>
        ${
          rows === undefined
            ? html`<p class="note">
                This log has no <code>subscriptions</code> topic yet: run
                <code>tidemark topics create</code> (it adds the topics of the Events extension).
              </p>`
            : rows.length === 0
              ? html`<p class="empty">No webhook subscriptions.</p>`
              : table(ctx, rows)
        }
      </section>
      ${rows === undefined || rows.length === 0 ? '' : recentDeliveries(ctx, rows)}`,
  );
}

function table(ctx: PageContext, rows: readonly SubscriptionRow[]): Html {
  return html`<table class="sessions" data-testid="subscriptions">
    <caption>
      Newest first
    </caption>
    <thead>
      <tr>
        <th scope="col">Id</th>
        <th scope="col">Event</th>
        <th scope="col">Subject</th>
        <th scope="col">Callback</th>
        <th scope="col">Expires</th>
        <th scope="col">Delivered</th>
        <th scope="col">Last delivery</th>
        <th scope="col">Failing since</th>
        <th scope="col">Last error</th>
      </tr>
    </thead>
    <tbody>
      ${rows.map(({ subscription: s, delivery }) => {
        const status = delivery?.status;
        return html`<tr>
          <td class="mono">${shortId(s.id)}</td>
          <td><code>${s.name}</code> <span class="mono">${JSON.stringify(s.arguments)}</span></td>
          <td>${s.subject}</td>
          <td class="mono">${callbackOf(s.url)}</td>
          <td>${time(s.expiresAtMs, ctx.now)}</td>
          <td>${status?.delivered ?? 0}</td>
          <td>
            ${status?.lastDeliveryAtMs === undefined ? '—' : time(status.lastDeliveryAtMs, ctx.now)}
          </td>
          <td>
            ${status?.failingSinceMs === undefined ? '—' : time(status.failingSinceMs, ctx.now)}
          </td>
          <td>${status?.lastError ?? '—'}</td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

/** The latest tries of every subscription shown, newest first. */
function recentDeliveries(ctx: PageContext, rows: readonly SubscriptionRow[]): Html {
  const tries = rows
    .flatMap(({ subscription, delivery }) =>
      (delivery?.status.recent ?? []).map((entry) => ({ subscription, ...entry })),
    )
    .sort((a, b) => b.atMs - a.atMs)
    .slice(0, 50);
  return html`<section aria-labelledby="deliveries-title">
    <h2 id="deliveries-title">Recent deliveries</h2>
    ${
      tries.length === 0
        ? html`<p class="empty">Nothing delivered yet.</p>`
        : html`<table class="sessions" data-testid="deliveries">
            <caption>
              The latest tries of each subscription, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Subscription</th>
                <th scope="col">webhook-id</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              ${tries.map(
                (entry) =>
                  html`<tr>
                    <td>${time(entry.atMs, ctx.now)}</td>
                    <td class="mono">${shortId(entry.subscription.id)}</td>
                    <td class="mono">${entry.messageId}</td>
                    <td>${entry.outcome}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
  </section>`;
}

/** A callback as an operator needs it: scheme, host and path — never its query (a client's key). */
function callbackOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(unreadable)';
  }
}
