import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Keyring, SigningKey } from './keyring.js';
import { derivedKey } from './keyed-token.js';

// The token of a signal's URL (`Execution.signal`): a capability — whoever holds the URL may
// answer the signal, once. It names the call it wakes (its owner key: a session id, a routing key
// or a task id), which must not leak to whoever gets the URL, so the claim is encrypted, not only
// signed: AES-256-GCM under a key derived from the deployment's secret (the tag is the MAC). A
// changed byte, another deployment's token or a guess opens as nothing.
//
// Format: base64url of `version 1B | key id 1B | iv 12B | ciphertext | tag 16B`.

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AAD = Buffer.from('tidemark signal');
/** The longest token opened: a stranger's input stays cheap to refuse. */
export const MAX_SIGNAL_TOKEN_LENGTH = 1024;

/** What a signal's token says: which signal of which call, and until when it may be answered. */
export interface SignalClaim {
  /** The key the call's stream is under (its session, routing key or task id). */
  readonly owner: string;
  /** The stream whose journal holds the call's steps. */
  readonly journal: string;
  /** The signal's name (its step is `signal <name>`). */
  readonly name: string;
  /** After this instant (ms since epoch) the signal is no longer answered; none: never expires. */
  readonly expiresAtMs?: number | undefined;
}

/** Why a token was refused (all of them are a 404 to whoever sent it: nothing to tell apart). */
export type SignalTokenProblem = 'malformed' | 'unknown-key' | 'mismatch' | 'expired';

/** A signal's token, under the keyring's current key. */
export function mintSignalToken(keyring: Keyring, claim: SignalClaim): string {
  const key = keyring.current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', tokenKey(key), iv);
  cipher.setAAD(AAD);
  const plain = JSON.stringify([claim.owner, claim.journal, claim.name, claim.expiresAtMs ?? 0]);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  const token = Buffer.concat([Buffer.from([VERSION, key.id]), iv, body, cipher.getAuthTag()]);
  return token.toString('base64url');
}

/** The claim of a signal's token, or why it is refused (`nowMs`: expired ones are). */
export function verifySignalToken(
  keyring: Keyring,
  token: unknown,
  nowMs: number,
): { ok: true; claim: SignalClaim } | { ok: false; problem: SignalTokenProblem } {
  if (
    typeof token !== 'string' ||
    token.length === 0 ||
    token.length > MAX_SIGNAL_TOKEN_LENGTH ||
    !/^[A-Za-z0-9_-]+$/.test(token)
  )
    return { ok: false, problem: 'malformed' };
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length < 2 + IV_BYTES + TAG_BYTES + 2 || bytes[0] !== VERSION)
    return { ok: false, problem: 'malformed' };
  const key = keyring.byId.get(bytes[1] as number);
  if (key === undefined || (key.verifyUntilMs !== undefined && nowMs > key.verifyUntilMs))
    return { ok: false, problem: 'unknown-key' };
  let claim: SignalClaim | undefined;
  try {
    const decipher = createDecipheriv(
      'aes-256-gcm',
      tokenKey(key),
      bytes.subarray(2, 2 + IV_BYTES),
    );
    decipher.setAAD(AAD);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(bytes.subarray(2 + IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
    claim = claimOf(JSON.parse(plain.toString('utf8')));
  } catch {
    return { ok: false, problem: 'mismatch' };
  }
  if (claim === undefined) return { ok: false, problem: 'mismatch' };
  if (claim.expiresAtMs !== undefined && nowMs > claim.expiresAtMs)
    return { ok: false, problem: 'expired' };
  return { ok: true, claim };
}

function claimOf(value: unknown): SignalClaim | undefined {
  if (!Array.isArray(value) || value.length !== 4) return undefined;
  const [owner, journal, name, expiresAtMs] = value as unknown[];
  if (typeof owner !== 'string' || typeof journal !== 'string' || typeof name !== 'string')
    return undefined;
  if (typeof expiresAtMs !== 'number' || !Number.isSafeInteger(expiresAtMs)) return undefined;
  return { owner, journal, name, ...(expiresAtMs === 0 ? {} : { expiresAtMs }) };
}

function tokenKey(key: SigningKey): Buffer {
  return derivedKey(key, 'tidemark/signal-token/v1');
}

/**
 * The method of the request a gateway writes for a POST to a signal's URL, keyed by the call's
 * owner, so the worker that runs the call reads it: params `{ token, value, subject? }`.
 */
export const SIGNAL_METHOD = 'tidemark/signal';

/**
 * The method of an operator's request (`tidemark calls wake`, sealed like a gateway's) under a
 * call's owner key: the worker that owns the call ends its sleeps now. Params `{ journal }`.
 */
export const WAKE_METHOD = 'tidemark/wake';

/**
 * How a worker refuses a signal's answer: the JSON-RPC error code it writes, which the gateway
 * turns into the POST's status (404, 409, 400).
 */
export const SignalErrorCodes = {
  /** No such signal (its call never asked for it, or its journal expired), or it expired. */
  unknown: -32041,
  /** Answered before: a signal takes one answer. */
  answered: -32042,
  /** The value fails the signal's schema. */
  invalid: -32043,
} as const;

/** Step names with this prefix are the runtime's own: a tool's `step` may not take one. */
export const RESERVED_STEP_PREFIX = 'tidemark:';

/**
 * The journal key of a signal's answer (written by the worker that reads the POST, not by a
 * step): in the reserved namespace, so no step of the tool's can be taken for it.
 */
export function signalAnswerStep(name: string): string {
  return `${RESERVED_STEP_PREFIX}answer ${name}`;
}
