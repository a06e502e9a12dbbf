import { invalidOption } from '../errors.js';

/**
 * The keys every replica shares: they sign event ids and keyed tokens, seal requests and secrets.
 * A key carries an id so a rotated key still verifies what was made before the rotation.
 */

/** The event-id format minted by default (see `ids/event-id.ts`). */
export const EVENT_ID_VERSION = 2;

/** The event-id formats a keyring can mint (both always verify). */
export type EventIdVersion = 1 | 2;

export interface SigningKey {
  /** 0–255, carried in every id so a rotated key can still verify ids minted before the rotation. */
  readonly id: number;
  /** At least 32 bytes. */
  readonly secret: Uint8Array;
  /** After this instant (ms since epoch) ids signed with this key no longer verify. */
  readonly verifyUntilMs?: number;
}

export interface KeyringOptions {
  /** The key that signs new ids. */
  current: SigningKey;
  /** Keys that still verify ids minted before a rotation, during their grace period. */
  previous?: readonly SigningKey[];
  /**
   * The format new ids are minted in (default 2). 1 while replicas of a release that verifies
   * only version 1 may be handed an id: during a rolling upgrade from 0.1.0.
   */
  mints?: EventIdVersion;
}

export interface Keyring {
  readonly current: SigningKey;
  readonly byId: ReadonlyMap<number, SigningKey>;
  readonly mints: EventIdVersion;
}

/** Validates keys up front: a short secret or a duplicate key id is a configuration bug. */
export function createKeyring(options: KeyringOptions): Keyring {
  const keys = [options.current, ...(options.previous ?? [])];
  const byId = new Map<number, SigningKey>();
  for (const key of keys) {
    if (!Number.isInteger(key.id) || key.id < 0 || key.id > 255) {
      throw invalidOption('key.id', 'an integer 0..255', key.id);
    }
    if (!(key.secret instanceof Uint8Array) || key.secret.length < 32) {
      throw invalidOption(
        `key ${key.id}: secret`,
        'at least 32 bytes',
        key.secret?.length ?? key.secret,
      );
    }
    if (byId.has(key.id)) throw invalidOption('key.id', 'unique key ids', key.id);
    byId.set(key.id, key);
  }
  const mints = options.mints ?? EVENT_ID_VERSION;
  if (mints !== 1 && mints !== 2) throw invalidOption('mints', 'event-id version 1 or 2', mints);
  return { current: options.current, byId, mints };
}
