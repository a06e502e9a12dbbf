import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createKeyring, type Keyring } from '@tidemark/protocol';
import type { Io } from './commands.js';
import { UsageError } from './options.js';

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

function readSecretFile(path: string): string {
  if (!existsSync(path)) throw new UsageError(`--secret-file: ${path} does not exist`);
  return readFileSync(path, 'utf8');
}

/** dev keeps its secret next to its log, so ids minted before a restart still verify after it. */
export function keyringOf(secret: Uint8Array): Keyring {
  return createKeyring({ current: { id: 1, secret } });
}
