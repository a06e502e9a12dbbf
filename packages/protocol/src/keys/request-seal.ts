import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Keyring, SigningKey } from './keyring.js';
import { derivedKey } from './keyed-token.js';

/**
 * Header of a request record: the seal its gateway put on it — `<key id>.<base64url HMAC-SHA256>`
 * over the record's key, value and every other header, under a key derived from the gateways'
 * shared secret. A worker given the same keyring drops a record whose seal is missing or wrong:
 * whoever can write to `requests` cannot act as a subject they did not authenticate as.
 */
export const SEAL_HEADER = 'tm-seal';

/**
 * Header of a request record, under its seal: `<partition>.<ms>` — where its gateway wrote it and
 * when. A copy appended again (a replay by whoever can write `requests`) is told apart: on another
 * partition, at another time (the broker stamps `LogAppendTime` on `requests`), or — inside the
 * window — as a second record of the same seal at another offset. Records of the release before
 * (#55) have none: a valid seal without it is `legacy`.
 */
export const SEALED_AT_HEADER = 'tm-sealed-at';

/** How far a record's log time may be from when its gateway sealed it (clock skew, produce retries). */
export const SEAL_WINDOW_MS = 5 * 60_000;

/** What a request record looks like to its seal (its partition is in `SEALED_AT_HEADER`). */
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
 * The headers that seal a record about to be written to `partition` of `requests`: where and when
 * (`SEALED_AT_HEADER`), then the seal over the record and that — appended to its headers.
 */
export function sealRequestHeaders(
  keyring: Keyring,
  record: SealedParts,
  partition: number,
  nowMs = Date.now(),
): Array<[string, string]> {
  const at: [string, string] = [SEALED_AT_HEADER, `${partition}.${Math.round(nowMs)}`];
  const withAt = { ...record, headers: [...record.headers, at] };
  return [at, sealRequestRecord(keyring, withAt)];
}

/** A record of `requests` as a worker reads it: with where it is and the log's time. */
export interface ReadRequestRecord extends SealedParts {
  readonly partition: number;
  readonly timestampMs: number;
}

export type SealCheck =
  | {
      readonly ok: true;
      /** The seal's MAC (base64url): a second record with it at another offset is a replay. */
      readonly seal: string;
      /** No `SEALED_AT_HEADER`: written by a gateway of the release before. */
      readonly legacy: boolean;
    }
  | {
      readonly ok: false;
      readonly problem:
        | 'missing'
        | 'unknown-key'
        | 'mismatch'
        | 'malformed-time'
        | 'other-partition'
        | 'outside-window';
    };

/**
 * Whether a record read from `requests` was sealed by a gateway for this partition, near the time
 * the log says it was written (`windowMs`). What it cannot tell — the same record appended again
 * on its partition inside the window — the caller tells by the seal (`SealCheck.seal`).
 */
export function checkSealedRecord(
  keyring: Keyring,
  record: ReadRequestRecord,
  windowMs = SEAL_WINDOW_MS,
): SealCheck {
  const seal = checkRequestSeal(keyring, record);
  if (seal !== 'valid') return { ok: false, problem: seal };
  const digest = record.headers.find(([name]) => name === SEAL_HEADER)![1].split('.', 2)[1]!;
  const at = record.headers.filter(([name]) => name === SEALED_AT_HEADER);
  if (at.length === 0) return { ok: true, seal: digest, legacy: true };
  const parsed = at.length === 1 ? /^(\d{1,6})\.(\d{1,15})$/.exec(at[0]![1]) : null;
  if (parsed === null) return { ok: false, problem: 'malformed-time' };
  if (Number(parsed[1]) !== record.partition) return { ok: false, problem: 'other-partition' };
  if (Math.abs(record.timestampMs - Number(parsed[2])) > windowMs)
    return { ok: false, problem: 'outside-window' };
  return { ok: true, seal: digest, legacy: false };
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
