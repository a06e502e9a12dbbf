import { createHash } from 'node:crypto';
import { createKeyring, type EventIdVersion, type Keyring, type SigningKey } from './keyring.js';
import { invalidOption } from '../errors.js';

/** The key id event ids carried before keys had ids of their own: the one secret of the time. */
const LEGACY_KEY_ID = 1;

/**
 * A keyring from the shared secret and, while a rotation is under way, the previous ones. Each
 * key's id derives from its secret, so every replica numbers a secret alike whichever of them it
 * holds as current: a rotation is two rollouts — first everyone verifies the new secret (as
 * previous), then everyone signs with it (the old one as previous) — and no replica ever sees an
 * id it cannot verify. With no previous secret, ids minted before key ids existed (id 1) still
 * verify under the current secret.
 */
export function keyringFromSecrets(
  current: Uint8Array,
  previous: readonly Uint8Array[] = [],
  /** The event-id format to mint (see `KeyringOptions.mints`). */
  mints: EventIdVersion = 2,
): Keyring {
  const key = (secret: Uint8Array): SigningKey => ({ id: keyIdOf(secret), secret });
  const keys = [key(current), ...previous.map(key)];
  const ids = new Set<number>();
  for (const { id } of keys) {
    if (ids.has(id))
      throw invalidOption(
        'previous secret',
        'a secret other than the current one (or the same one given twice): generate a new secret',
        `key id ${id}`,
      );
    ids.add(id);
  }
  const legacy = previous.length === 0 ? [{ id: LEGACY_KEY_ID, secret: current }] : [];
  return createKeyring({ current: keys[0]!, previous: [...keys.slice(1), ...legacy], mints });
}

/** 2..255, from the secret: the same on every replica. */
function keyIdOf(secret: Uint8Array): number {
  return 2 + (createHash('sha256').update(secret).digest()[0]! % 254);
}
