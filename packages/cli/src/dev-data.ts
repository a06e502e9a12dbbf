import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedLog } from '@tidemark/embedded-log';
import { ErrorCodes, isTidemarkError } from '@tidemark/protocol';

// `tidemark dev`'s data directory: its log and its event-id secret, this user's only (the log
// holds every request and result, the secret signs event ids), and one process's at a time.

/** The dev log, or a refusal that says who holds it and the way out. */
export function openDevLog(data: string): EmbeddedLog {
  mkdirSync(data, { recursive: true, mode: 0o700 });
  chmodSync(data, 0o700);
  let log: EmbeddedLog;
  try {
    log = new EmbeddedLog({ path: join(data, 'log.sqlite'), retentionCheckIntervalMs: 10_000 });
  } catch (error) {
    if (isTidemarkError(error) && error.code === ErrorCodes.logLocked)
      throw new Error(
        `${error.message}: another tidemark is serving from ${data}. Stop it, or give this one a directory of its own: --data <dir>`,
        { cause: error },
      );
    throw error;
  }
  chmodSync(join(data, 'log.sqlite'), 0o600); // SQLite gives its -wal and -shm files the same mode
  return log;
}

/** The secret that signs this directory's event ids: made once, kept across restarts. */
export function devSecret(data: string): Uint8Array {
  const path = join(data, 'secret');
  try {
    // Created exclusively (O_EXCL): two processes starting at once cannot both write one.
    writeFileSync(path, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return Buffer.from(readFileSync(path, 'utf8').trim());
}
