import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { keyringFromSecrets, type EventIdVersion, type Keyring } from '@tidemark/protocol';
import type { Io } from '../io.js';
import { UsageError } from '../options.js';

/** The event-id secret outside dev: a file or TIDEMARK_SECRET, at least 32 bytes. */
export function secretOf(file: string | undefined, io: Io): Uint8Array {
  const raw =
    file !== undefined ? readSecretFile(resolve(io.cwd, file)) : io.env['TIDEMARK_SECRET'];
  if (raw === undefined)
    throw new UsageError(
      '--secret-file: required (or set TIDEMARK_SECRET): the event-id secret every replica shares',
    );
  const secret = Buffer.from(raw.trim());
  if (secret.length < 32)
    throw new UsageError(
      `--secret-file: the secret must be at least 32 bytes, got ${secret.length}`,
    );
  return secret;
}

function readSecretFile(path: string, flag = '--secret-file'): string {
  if (!existsSync(path)) throw new UsageError(`${flag}: ${path} does not exist`);
  return readFileSync(path, 'utf8');
}

/**
 * The keyring of the shared secret, and of the previous ones while a rotation is under way (ids
 * they signed still verify). dev keeps its secret next to its log, so ids minted before a restart
 * still verify after it.
 */
export function keyringOf(
  secret: Uint8Array,
  previous: readonly Uint8Array[] = [],
  mints: EventIdVersion = 2,
): Keyring {
  return keyringFromSecrets(secret, previous, mints);
}

/**
 * `--event-id-version` (or TIDEMARK_EVENT_ID_VERSION): the format a gateway mints. 1 by default in
 * this release: a gateway of 0.1.0 verifies only version 1, and during a rolling upgrade a client
 * may resume on one with an id a new gateway minted. Once every gateway runs this release, 2 (a
 * one-pass MAC, cheaper per delivered event); both are verified either way.
 */
export function eventIdVersionOf(flag: string | undefined, io: Io): EventIdVersion {
  const raw = flag ?? io.env['TIDEMARK_EVENT_ID_VERSION'];
  if (raw === undefined || raw.trim() === '') return 1;
  if (raw.trim() === '1' || raw.trim() === '2') return Number(raw.trim()) as EventIdVersion;
  throw new UsageError(
    `--event-id-version: 1 or 2 (the event-id format new ids are minted in), got "${raw}"`,
  );
}

/** `--previous-secret-file` (repeatable) and `TIDEMARK_PREVIOUS_SECRET`: secrets that still verify. */
export function previousSecretsOf(files: readonly string[], io: Io): Uint8Array[] {
  const raws = files.map((file) => readSecretFile(resolve(io.cwd, file), '--previous-secret-file'));
  const fromEnv = io.env['TIDEMARK_PREVIOUS_SECRET'];
  if (fromEnv !== undefined && fromEnv.trim() !== '') raws.push(fromEnv);
  return raws.map((raw) => {
    const secret = Buffer.from(raw.trim());
    if (secret.length < 32)
      throw new UsageError(
        `--previous-secret-file: a secret must be at least 32 bytes, got ${secret.length}`,
      );
    return secret;
  });
}

/**
 * The gateways' keyring, which the worker must be given: then it takes only requests a gateway
 * sealed. Without it (`--accept-unsealed`, said, never the default) whoever can write `requests` is
 * trusted to say which subject a request comes from.
 */
export function workerKeyringOf(
  file: string | undefined,
  previous: readonly string[],
  io: Io,
  options: {
    /** A module offers event types: their cursors are signed with the keyring. */
    offersEvents: boolean;
    /** `--accept-unsealed`: run without the secret, trusting every writer of `requests`. */
    acceptUnsealed: boolean;
  },
): Keyring | undefined {
  if (file === undefined && io.env['TIDEMARK_SECRET'] === undefined) {
    if (options.offersEvents)
      throw new UsageError(
        "--secret-file (or TIDEMARK_SECRET): required when a tool module offers event types; the gateways' secret signs their cursors",
      );
    if (!options.acceptUnsealed)
      throw new UsageError(
        "--secret-file (or TIDEMARK_SECRET): the gateways' secret, with which the worker takes only the requests a gateway sealed (--accept-unsealed runs without it: anyone who can write the requests topic can then act as any subject)",
      );
    io.logger.warn(
      '--accept-unsealed: requests are not checked for a gateway seal; anyone who can write the requests topic can act as any subject',
    );
    return undefined;
  }
  return keyringOf(secretOf(file, io), previousSecretsOf(previous, io));
}
