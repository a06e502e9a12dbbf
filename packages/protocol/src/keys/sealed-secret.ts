import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Keyring, SigningKey } from './keyring.js';
import { derivedKey } from './keyed-token.js';

// A webhook subscription's signing secret is the client's, and the workers need it to sign every
// delivery, so it is kept in the log — encrypted, never in the clear: AES-256-GCM under a key
// derived from the deployment's secret, bound to the subscription it belongs to, so a sealed
// secret copied onto another subscription record does not open.
//
// Format: `s1.<key id>.<base64url: iv 12B | ciphertext | tag 16B>`.

const PREFIX = 's1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Encrypts `secret` for the subscription `context` under the keyring's current key. */
export function sealSecret(keyring: Keyring, secret: string, context: string): string {
  const key = keyring.current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', secretKey(key), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  const sealed = Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
  return `${PREFIX}.${key.id}.${sealed}`;
}

/**
 * The secret a sealed value holds for `context`, or why not: a key this keyring no longer holds
 * (rotated out: the client must subscribe again), or a value that was changed or belongs to
 * another subscription.
 */
export function openSecret(
  keyring: Keyring,
  sealed: string,
  context: string,
): { ok: true; secret: string } | { ok: false; problem: 'malformed' | 'unknown-key' | 'mismatch' } {
  const [prefix, id, body] = sealed.split('.');
  if (prefix !== PREFIX || id === undefined || !/^\d{1,3}$/.test(id) || body === undefined)
    return { ok: false, problem: 'malformed' };
  const key = keyring.byId.get(Number(id));
  if (key === undefined) return { ok: false, problem: 'unknown-key' };
  const bytes = Buffer.from(body, 'base64url');
  if (bytes.length < IV_BYTES + TAG_BYTES) return { ok: false, problem: 'malformed' };
  try {
    const decipher = createDecipheriv('aes-256-gcm', secretKey(key), bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const plain = Buffer.concat([
      decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]);
    return { ok: true, secret: plain.toString('utf8') };
  } catch {
    return { ok: false, problem: 'mismatch' };
  }
}

function secretKey(key: SigningKey): Buffer {
  return derivedKey(key, 'tidemark/webhook-secret/v1');
}
