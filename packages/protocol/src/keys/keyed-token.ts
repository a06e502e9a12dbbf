import { createHmac, hkdfSync } from 'node:crypto';
import type { Keyring, SigningKey } from './keyring.js';

// What every opaque token this deployment mints shares (SSE event ids, event cursors): base64url
// of a body that opens with a version byte and a key id byte, and ends with a truncated
// HMAC-SHA256 under that key over the body and what the token is bound to (a session, a stream).

export const MAC_BYTES = 16;

/** Why a token was refused before its body was read. */
export type TokenProblem = 'malformed' | 'unsupported-version' | 'unknown-key';

export type OpenedToken =
  | { readonly ok: true; readonly bytes: Buffer; readonly key: SigningKey }
  | { readonly ok: false; readonly problem: TokenProblem; readonly detail: string };

export interface OpenTokenOptions {
  readonly version: number;
  /** An older version still accepted (its MAC is the caller's to check by it). */
  readonly alsoAccepts?: number;
  /** The shortest well-formed token, in bytes, MAC included. */
  readonly minBytes: number;
  /** The longest token accepted, in characters: a bound keeps hostile input cheap to refuse. */
  readonly maxLength: number;
  readonly keyring: Keyring;
  /** Now, in ms since epoch: keys past `verifyUntilMs` are refused. */
  readonly nowMs: number;
}

/** A token's bytes and the key it names, checked for shape, version and key before anything else. */
export function openToken(raw: unknown, options: OpenTokenOptions): OpenedToken {
  if (
    typeof raw !== 'string' ||
    raw.length === 0 ||
    raw.length > options.maxLength ||
    !/^[A-Za-z0-9_-]+$/.test(raw)
  )
    return refused('malformed', `not a base64url string of 1..${options.maxLength} characters`);
  const bytes = Buffer.from(raw, 'base64url');
  if (bytes.toString('base64url') !== raw) return refused('malformed', 'not canonical base64url');
  if (bytes.length < options.minBytes) return refused('malformed', 'too short');
  if (bytes[0] !== options.version && bytes[0] !== options.alsoAccepts)
    return refused('unsupported-version', `version ${bytes[0]}`);
  const keyId = bytes[1] as number;
  const key = options.keyring.byId.get(keyId);
  if (key === undefined) return refused('unknown-key', `key ${keyId} is not in the keyring`);
  if (key.verifyUntilMs !== undefined && options.nowMs > key.verifyUntilMs)
    return refused('unknown-key', `key ${keyId} was retired and its grace period is over`);
  return { ok: true, bytes, key };
}

/** The MAC of a token's body bound to `context` (a session id, an event stream). */
export function tokenMac(key: SigningKey, body: Buffer, context: string): Buffer {
  return createHmac('sha256', key.secret)
    .update(body)
    .update('\u0000')
    .update(context)
    .digest()
    .subarray(0, MAC_BYTES);
}

/**
 * A short keyed hash of what a token is bound to, carried in the token so that a token of another
 * session or stream is told apart from a tampered one; the MAC alone decides validity.
 */
export function contextTag(key: SigningKey, label: string, context: string, bytes: number): Buffer {
  return createHmac('sha256', key.secret)
    .update(`${label}\u0000`)
    .update(context)
    .digest()
    .subarray(0, bytes);
}

/** A token checked against what it is bound to: the claim it makes, or why it was refused. */
export type TokenVerification<Claim, Problem extends string> =
  | { readonly ok: true; readonly claim: Claim }
  | { readonly ok: false; readonly problem: TokenProblem | Problem; readonly detail: string };

const derived = new Map<string, WeakMap<SigningKey, Buffer>>();

/**
 * A key for a second purpose (`info` names it), derived once from a signing key with HKDF: the
 * event-id secret is never used directly for anything but event ids.
 */
export function derivedKey(key: SigningKey, info: string): Buffer {
  let keys = derived.get(info);
  if (keys === undefined) derived.set(info, (keys = new WeakMap()));
  let bytes = keys.get(key);
  if (bytes === undefined) {
    bytes = Buffer.from(hkdfSync('sha256', key.secret, '', info, 32));
    keys.set(key, bytes);
  }
  return bytes;
}

function refused(problem: TokenProblem, detail: string): OpenedToken {
  return { ok: false, problem, detail };
}
