import { createHash } from 'node:crypto';

// An event stream is one event type with one set of subscription arguments: every subscriber of
// the stream reads the same occurrences in the same order, from one partition. The arguments are
// compared as canonical JSON, so `{ a, b }` and `{ b, a }` are one stream.

/** JSON with object keys sorted at every depth; refuses what JSON cannot carry. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sorted(value, 0));
}

const MAX_DEPTH = 32;

function sorted(value: unknown, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new TypeError(`arguments nested deeper than ${MAX_DEPTH} levels`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`arguments hold a non-finite number`);
    return value;
  }
  if (Array.isArray(value)) return value.map((item) => sorted(item, depth + 1));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sorted((value as Record<string, unknown>)[key], depth + 1)]),
    );
  throw new TypeError(
    `arguments hold ${typeof value === 'object' ? 'an object that is not plain JSON' : `a ${typeof value}`}`,
  );
}

/**
 * The key of an event stream in the log (its record key, and so its partition): a digest of the
 * event name and its canonical arguments — and, for a stream of one subject's (an event type
 * scoped per subject, read by an authenticated client), that subject — 22 base64url characters
 * after `ev.`. Two subjects with the same arguments read two streams.
 */
export function eventStreamKey(name: string, args: unknown, subject?: string): string {
  const canonical = canonicalJson(args ?? {});
  return `ev.${subject === undefined ? digest(name, canonical) : digest(name, canonical, subject)}`;
}

/** What makes a webhook subscription the same subscription when a client subscribes again. */
export interface SubscriptionIdentity {
  /** The authenticated subject that subscribed. */
  readonly principal: string;
  /** The callback URL exactly as given (a client's routing key may be in its query). */
  readonly url: string;
  readonly name: string;
  readonly arguments: unknown;
}

/**
 * A webhook subscription's id: the same for the same principal, callback, event and arguments, on
 * every replica, so a refresh finds the subscription it renews; different for anything else.
 */
export function subscriptionIdOf(identity: SubscriptionIdentity): string {
  return `sub_${digest(identity.principal, identity.url, identity.name, canonicalJson(identity.arguments ?? {}))}`;
}

function digest(...parts: string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\u0000');
  return hash.digest().subarray(0, 16).toString('base64url');
}
