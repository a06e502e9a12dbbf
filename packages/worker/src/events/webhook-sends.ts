import type {
  OccurrenceLog,
  RecentDelivery,
  DeliveryStatus,
  WebhookSubscription,
} from '@tidemark/log';
import { RECENT_DELIVERIES } from '@tidemark/log';
import type { EventOccurrence, WebhookControl } from '@tidemark/protocol';

// What a subscription's delivery loop sends for a page of its stream: the occurrences, gaps in
// place of what it may not deliver, and the record of its latest tries.

/** One POST to make: its `webhook-id`, body, the position after it, and whether it is an event. */
export interface Send {
  readonly messageId: string;
  readonly body: string;
  readonly next: bigint;
  readonly counts: boolean;
}

/**
 * The deliveries of a page: each occurrence, except those older than the subscription's
 * `maxAgeMs` — skipped, a run of them at a time, with a `gap` that says so in their place.
 */
export function sendsOf(
  occurrences: OccurrenceLog,
  subscription: WebhookSubscription,
  events: ReadonlyArray<EventOccurrence & { offset: bigint }>,
): Send[] {
  const oldest =
    subscription.maxAgeMs === undefined ? undefined : Date.now() - subscription.maxAgeMs;
  const sends: Send[] = [];
  let skippedTo: bigint | undefined;
  const closeGap = () => {
    if (skippedTo === undefined) return;
    sends.push(
      gapAt(subscription, occurrences.cursorAt(subscription.stream, skippedTo), skippedTo),
    );
    skippedTo = undefined;
  };
  for (const { offset, ...event } of events) {
    if (oldest !== undefined && Date.parse(event.timestamp) < oldest) {
      skippedTo = offset + 1n;
      continue;
    }
    closeGap();
    sends.push({
      messageId: event.eventId,
      body: JSON.stringify(event),
      next: offset + 1n,
      counts: true,
    });
  }
  closeGap();
  return sends;
}

/** The latest tries with one more, the oldest dropped past `RECENT_DELIVERIES`. */
export function recentWith(status: DeliveryStatus, entry: RecentDelivery): RecentDelivery[] {
  return [...(status.recent ?? []), entry].slice(-RECENT_DELIVERIES);
}

/** A `gap` control delivery: the subscriber's cursor moves to `cursor` (offset `next`). */
export function gapAt(subscription: WebhookSubscription, cursor: string, next: bigint): Send {
  const gap: WebhookControl = { type: 'gap', cursor };
  return {
    messageId: `gap_${subscription.id}_${next}`,
    body: JSON.stringify(gap),
    next,
    counts: false,
  };
}
