// The Events extension (`io.modelcontextprotocol/events`, SEP-3415) on the wire: its methods, an
// event type as `events/list` describes it, one occurrence as every delivery carries it, and the
// control bodies of a webhook delivery. Shapes as the clients accept them (docs/design/events.md).

/** The extension's identifier, in capabilities. */
export const EVENTS_EXTENSION = 'io.modelcontextprotocol/events';

export const EventMethods = {
  list: 'events/list',
  poll: 'events/poll',
  stream: 'events/stream',
  subscribe: 'events/subscribe',
  unsubscribe: 'events/unsubscribe',
} as const;

/**
 * The notifications of a push stream (`events/stream`): `active` first, with the cursor it starts
 * from; an `event` per occurrence, with the cursor after it; a `heartbeat` with the cursor when
 * nothing happened for a while. Each carries the stream's subscription id in `_meta`.
 */
export const EventNotifications = {
  active: 'notifications/events/active',
  event: 'notifications/events/event',
  heartbeat: 'notifications/events/heartbeat',
} as const;

/** How a client may receive an event type's occurrences. */
export type EventDelivery = 'poll' | 'push' | 'webhook';

export const EVENT_DELIVERIES: readonly EventDelivery[] = ['poll', 'push', 'webhook'];

/** An event type, as `events/list` lists it. */
export interface EventTypeDescriptor {
  readonly name: string;
  readonly description?: string;
  readonly delivery: readonly EventDelivery[];
  /** JSON Schema of the subscription arguments. */
  readonly inputSchema: Readonly<Record<string, unknown>> | boolean;
  /** JSON Schema of an occurrence's `data`. */
  readonly payloadSchema: Readonly<Record<string, unknown>> | boolean;
}

/** One occurrence, as poll, push and webhook deliver it. */
export interface EventOccurrence {
  /** Stable across redeliveries: a webhook's `webhook-id`, what receivers deduplicate on. */
  readonly eventId: string;
  readonly name: string;
  /** When it happened, ISO 8601. */
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>>;
  /** Where a subscriber resumes after this occurrence. */
  readonly cursor?: string | null;
}

/** The bodies of a webhook delivery that are not an occurrence. */
export type WebhookControl =
  | { readonly type: 'verification'; readonly challenge: string }
  /** Occurrences were skipped (retention, a delivery given up): the subscriber resumes at `cursor`. */
  | { readonly type: 'gap'; readonly cursor: string }
  | {
      readonly type: 'terminated';
      readonly error: { readonly code: number; readonly message: string; readonly data?: unknown };
    };

/** The header that names a webhook delivery's subscription. */
export const SUBSCRIPTION_ID_HEADER = 'X-MCP-Subscription-Id';

/** The largest webhook body a receiver accepts (the clients' 256 KiB). */
export const MAX_WEBHOOK_BODY_BYTES = 256 * 1024;
