import { createHash } from 'node:crypto';
import { partitionOfRecordKey, type LogPort } from '@tidemark/protocol';
import { KeyedTable } from './keyed-table.js';

// What the `subscriptions` table holds about event streams, keyed so that a stream's records are
// in its own partition (the one its occurrences and its source's owner have):
// - `lease:<stream>` — someone polls or streams it until `untilMs`: its source should run;
// - `source:<stream>` — where its source resumes: the position recorded with the occurrence at
//   `offset` of `occurrences`;
// - `sub:<subject tag>:<id>` — a webhook subscription, written only by `events/subscribe`;
// - `dlv:<subject tag>:<id>` — where its deliveries stand, written only by the owner delivering it
//   (two records, so a refresh and a delivery never overwrite each other's news).

/** Header of a record of the table: its format version. */
const REGISTRY_HEADER = 'tm-evreg';
const REGISTRY_VERSION = '1';

/** Interest in a stream that no webhook subscription records: a poller's or a push stream's. */
export interface StreamLease {
  readonly stream: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly untilMs: number;
  /** Whose stream it is, for a type scoped per subject (its source is told). */
  readonly subject?: string;
}

/** Where a stream's source resumes. */
export interface SourceHead {
  readonly position: string;
  /** The offset in `occurrences` of the occurrence that recorded it. */
  readonly offset: bigint;
}

/** How a webhook subscription's deliveries go (`deliveryStatus`, the console). */
export interface DeliveryStatus {
  /** Occurrences delivered (answered 2xx) since the subscription was created. */
  readonly delivered: number;
  readonly lastDeliveryAtMs?: number;
  /** The last failure, said for an operator (status code or network error). */
  readonly lastError?: string;
  /** Since when deliveries fail without a success in between. */
  readonly failingSinceMs?: number;
  /** The latest tries, newest last (at most `RECENT_DELIVERIES`), for the console. */
  readonly recent?: readonly RecentDelivery[];
}

/** One try of a delivery: its `webhook-id`, when, and what came of it. */
export interface RecentDelivery {
  readonly messageId: string;
  readonly atMs: number;
  /** The receiver's status (`204`), or the failure said for an operator. */
  readonly outcome: string;
}

/** Tries kept per subscription in its delivery record. */
export const RECENT_DELIVERIES = 10;

/** A webhook subscription (`events/subscribe`), as it is kept. */
export interface WebhookSubscription {
  readonly id: string;
  /** The authenticated subject that subscribed. */
  readonly subject: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly stream: string;
  /** The callback URL exactly as given. */
  readonly url: string;
  /** The client's signing secret, sealed for this subscription (`sealSecret`). */
  readonly sealedSecret: string;
  readonly createdAtMs: number;
  /** Unrefreshed, the subscription ends then. */
  readonly expiresAtMs: number;
  /** Occurrences older than this when delivered are skipped (with a `gap`): the client's `maxAgeMs`. */
  readonly maxAgeMs?: number;
  /**
   * Where deliveries start: the client's cursor (or "now") when it was last given. Deliveries
   * move on from it; a newer start (a client's cursor on a refresh) takes over from them.
   */
  readonly start: { readonly offset: bigint; readonly setAtMs: number };
}

/** Where a subscription's deliveries stand. */
export interface DeliveryState {
  /** The offset in `occurrences` of the next occurrence to deliver. */
  readonly position: bigint;
  /** The subscription `start` this position continues. */
  readonly startSetAtMs: number;
  readonly status: DeliveryStatus;
}

type SubscriptionKey = Pick<WebhookSubscription, 'stream' | 'subject' | 'id'>;
type StoredSubscription = Omit<WebhookSubscription, 'start'> & {
  readonly start: { readonly offset: string; readonly setAtMs: number };
};
type StoredDelivery = Omit<DeliveryState, 'position'> & { readonly position: string };

type RegistryValue =
  | ({ readonly kind: 'lease' } & StreamLease)
  | { readonly kind: 'source'; readonly position: string; readonly offset: string }
  | ({ readonly kind: 'sub' } & StoredSubscription)
  | ({ readonly kind: 'dlv' } & StoredDelivery);

export interface EventRegistryOptions {
  readonly port: LogPort;
  /** The `subscriptions` topic. */
  readonly topic: string;
  readonly partitionCount: number;
}

/** The leases and source heads of event streams, over the compacted `subscriptions` topic. */
export class EventRegistry extends KeyedTable<RegistryValue> {
  constructor(private readonly options: EventRegistryOptions) {
    super(options.partitionCount, {
      port: options.port,
      topic: options.topic,
      decode: decodeValue,
      encode: (value) => Buffer.from(JSON.stringify(value)),
      headers: () => [[REGISTRY_HEADER, REGISTRY_VERSION]],
    });
  }

  /** The partition of an event stream, here and in `occurrences`: its key places it as a session's does. */
  override partitionOf(stream: string): number {
    return partitionOfRecordKey(stream, this.options.partitionCount);
  }

  /** Records that someone wants `stream` until `lease.untilMs`. */
  renewLease(lease: StreamLease): Promise<void> {
    return this.table.put(this.partitionOf(lease.stream), leaseKey(lease.stream), {
      kind: 'lease',
      ...lease,
    });
  }

  /**
   * The leases of a partition as of now (read to its end first): the live ones, and the streams
   * of those that ran out (for `dropLeases`).
   */
  async leases(
    partition: number,
    nowMs: number,
  ): Promise<{ live: StreamLease[]; expired: string[] }> {
    await this.table.catchUp(partition);
    const live: StreamLease[] = [];
    const expired: string[] = [];
    for (const [key] of [...this.table.entries(partition)]) {
      if (!key.startsWith(LEASE_PREFIX)) continue;
      const value = await this.table.get(partition, key);
      if (value?.kind !== 'lease') continue;
      const { kind: _kind, ...lease } = value;
      if (lease.untilMs > nowMs) live.push(lease);
      else expired.push(lease.stream);
    }
    return { live, expired };
  }

  /** Tombstones the leases of streams nobody wants any more (the table stays small). */
  dropLeases(partition: number, streams: readonly string[]): Promise<void> {
    return this.table.deleteMany(partition, streams.map(leaseKey));
  }

  async sourceHead(stream: string): Promise<SourceHead | undefined> {
    const value = await this.table.get(this.partitionOf(stream), SOURCE_PREFIX + stream);
    return value?.kind === 'source'
      ? { position: value.position, offset: BigInt(value.offset) }
      : undefined;
  }

  putSourceHead(stream: string, head: SourceHead): Promise<void> {
    return this.table.put(this.partitionOf(stream), SOURCE_PREFIX + stream, {
      kind: 'source',
      position: head.position,
      offset: head.offset.toString(),
    });
  }

  /** Records a subscription, or its refresh. */
  putSubscription(subscription: WebhookSubscription): Promise<void> {
    const { start } = subscription;
    return this.table.put(this.partitionOf(subscription.stream), recordKey('sub', subscription), {
      kind: 'sub',
      ...subscription,
      start: { offset: start.offset.toString(), setAtMs: start.setAtMs },
    });
  }

  async subscription(key: SubscriptionKey): Promise<WebhookSubscription | undefined> {
    const value = await this.table.get(this.partitionOf(key.stream), recordKey('sub', key));
    return value?.kind === 'sub' ? subscriptionOf(value) : undefined;
  }

  /** Removes a subscription and its delivery state. */
  dropSubscription(key: SubscriptionKey): Promise<void> {
    const keys = [recordKey('sub', key), recordKey('dlv', key)];
    return this.table.deleteMany(this.partitionOf(key.stream), keys);
  }

  async deliveryState(key: SubscriptionKey): Promise<DeliveryState | undefined> {
    const value = await this.table.get(this.partitionOf(key.stream), recordKey('dlv', key));
    if (value?.kind !== 'dlv') return undefined;
    const { kind: _kind, ...stored } = value;
    return { ...stored, position: BigInt(stored.position) };
  }

  putDeliveryState(key: SubscriptionKey, state: DeliveryState): Promise<void> {
    return this.table.put(this.partitionOf(key.stream), recordKey('dlv', key), {
      kind: 'dlv',
      ...state,
      position: state.position.toString(),
    });
  }

  /** The subscriptions of a partition as of now (read to its end first). */
  async subscriptions(partition: number): Promise<WebhookSubscription[]> {
    await this.table.catchUp(partition);
    const found: WebhookSubscription[] = [];
    for (const [key] of [...this.table.entries(partition)]) {
      if (!key.startsWith('sub:')) continue;
      const value = await this.table.get(partition, key);
      if (value?.kind === 'sub') found.push(subscriptionOf(value));
    }
    return found;
  }

  /** How many subscriptions `subject` has, in every partition (for its cap). */
  async countOf(subject: string): Promise<number> {
    const prefix = `sub:${subjectTag(subject)}:`;
    let count = 0;
    for (let partition = 0; partition < this.options.partitionCount; partition++) {
      await this.table.catchUp(partition);
      for (const [key] of this.table.entries(partition)) if (key.startsWith(prefix)) count++;
    }
    return count;
  }
}

const LEASE_PREFIX = 'lease:';
const SOURCE_PREFIX = 'source:';

/** A subscription's records' keys: its subject's tag first, so a subject's can be counted. */
function recordKey(kind: 'sub' | 'dlv', key: Pick<WebhookSubscription, 'subject' | 'id'>): string {
  return `${kind}:${subjectTag(key.subject)}:${key.id}`;
}

function subjectTag(subject: string): string {
  return createHash('sha256').update(subject).digest().subarray(0, 9).toString('base64url');
}

function subscriptionOf(value: { kind: 'sub' } & StoredSubscription): WebhookSubscription {
  const { kind: _kind, ...stored } = value;
  return {
    ...stored,
    start: { offset: BigInt(stored.start.offset), setAtMs: stored.start.setAtMs },
  };
}

function leaseKey(stream: string): string {
  return LEASE_PREFIX + stream;
}

/** What a record of each kind must hold to be read. */
const WELL_FORMED: Record<RegistryValue['kind'], (parsed: Record<string, unknown>) => boolean> = {
  lease: (v) =>
    typeof v['stream'] === 'string' &&
    typeof v['name'] === 'string' &&
    typeof v['untilMs'] === 'number' &&
    isObject(v['arguments']) &&
    (v['subject'] === undefined || typeof v['subject'] === 'string'),
  source: (v) => typeof v['position'] === 'string' && isDigits(v['offset']),
  sub: (v) =>
    ['id', 'subject', 'stream', 'url', 'sealedSecret'].every((f) => typeof v[f] === 'string') &&
    typeof v['expiresAtMs'] === 'number' &&
    isObject(v['start']) &&
    isDigits(v['start']['offset']) &&
    typeof v['start']['setAtMs'] === 'number',
  dlv: (v) =>
    isDigits(v['position']) && typeof v['startSetAtMs'] === 'number' && isObject(v['status']),
};

function decodeValue(
  value: Uint8Array,
  headers: ReadonlyArray<readonly [string, string]>,
): RegistryValue | undefined {
  if (!headers.some(([name, v]) => name === REGISTRY_HEADER && v === REGISTRY_VERSION))
    return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(value).toString('utf8')) as unknown;
    if (!isObject(parsed)) return undefined;
    const wellFormed = WELL_FORMED[parsed['kind'] as RegistryValue['kind']];
    return wellFormed?.(parsed) === true ? (parsed as RegistryValue) : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isDigits(value: unknown): boolean {
  return typeof value === 'string' && /^\d+$/.test(value);
}
