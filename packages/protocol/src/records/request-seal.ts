import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Keyring, SigningKey } from '../ids/event-id.js';
import { derivedKey } from '../ids/keyed-token.js';

/**
 * Header of a request record: the seal its gateway put on it — `<key id>.<base64url HMAC-SHA256>`
 * over the record's key, value and every other header, under a key derived from the gateways'
 * shared secret. A worker given the same keyring drops a record whose seal is missing or wrong:
 * whoever can write to `requests` cannot act as a subject they did not authenticate as.
 */
export const SEAL_HEADER = 'tm-seal';

/** What a request record looks like to its seal (its partition is not part of it). */
export interface SealedParts {
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

/** The seal header for a record about to be written, under the keyring's current key. */
export function sealRequestRecord(keyring: Keyring, record: SealedParts): [string, string] {
  const key = keyring.current;
  return [SEAL_HEADER, `${key.id}.${mac(key, record).toString('base64url')}`];
}

/**
 * Whether a record read from `requests` carries a valid seal of a key in the keyring: `missing`
 * (no seal), `unknown-key` (a key this keyring does not hold), `mismatch` (changed, or forged).
 */
export function checkRequestSeal(
  keyring: Keyring,
  record: SealedParts,
): 'valid' | 'missing' | 'unknown-key' | 'mismatch' {
  const seals = record.headers.filter(([name]) => name === SEAL_HEADER);
  if (seals.length !== 1) return 'missing';
  const [id, digest] = seals[0]![1].split('.', 2);
  const key = keyring.byId.get(Number(id));
  if (key === undefined || !/^\d{1,3}$/.test(id ?? '')) return 'unknown-key';
  const presented = Buffer.from(digest ?? '', 'base64url');
  const unsealed = { ...record, headers: record.headers.filter(([name]) => name !== SEAL_HEADER) };
  const expected = mac(key, unsealed);
  return presented.length === expected.length && timingSafeEqual(presented, expected)
    ? 'valid'
    : 'mismatch';
}

function sealKey(key: SigningKey): Buffer {
  return derivedKey(key, 'tidemark/request-seal/v1');
}

function mac(key: SigningKey, record: SealedParts): Buffer {
  const hmac = createHmac('sha256', sealKey(key));
  // Length-prefixed parts: no two different records read as the same bytes.
  const part = (bytes: Uint8Array | string | null) => {
    if (bytes === null) return void hmac.update('-');
    const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    hmac.update(`${buffer.length}:`);
    hmac.update(buffer);
  };
  part(record.key);
  part(record.value);
  for (const [name, value] of record.headers) {
    part(name);
    part(value);
  }
  return hmac.digest();
}
