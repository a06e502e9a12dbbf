import { recordWorkerRefusal } from '@tidemark/otel';
import { checkSealedRecord, SEAL_WINDOW_MS, type LogRecord } from '@tidemark/protocol';
import type { CompiledWorkerOptions } from '../worker-options.js';

/**
 * With the gateways' keyring, a record is taken only with a valid gateway seal, made for its
 * partition near the time the log says it was written, and seen once: one written by anyone else
 * who can write `requests` — forged, or a sealed record appended again (a replay: on another
 * partition, later, or a second copy inside the window) — is dropped unanswered (an answer would go
 * to whoever it names), said and counted. Without a keyring, every record is taken.
 */
export class SealedRecords {
  /**
   * The seals taken inside the window, with where: the same record read again (a partition handed
   * back, a restart short of its commit) is at the same offset; a replay is at another. Oldest
   * first, so the ones past the window are dropped from the front.
   */
  private readonly seen = new Map<string, { where: string; atMs: number }>();
  private legacySaid = false;

  constructor(private readonly options: Pick<CompiledWorkerOptions, 'keyring' | 'onProblem'>) {}

  /** Whether to take `record` (`at` names it in what is said). */
  admit(record: LogRecord, at: string): boolean {
    const { keyring } = this.options;
    if (keyring === undefined) return true;
    const seal = checkSealedRecord(keyring, record);
    if (!seal.ok) return this.drop(at, seal.problem);
    if (seal.legacy) {
      // A gateway of the release before (a rolling upgrade): taken, said once.
      if (!this.legacySaid)
        this.options.onProblem(
          `${at}: sealed without a time and partition (a gateway of the release before); taken — replays of such records are not told apart`,
        );
      this.legacySaid = true;
      return true;
    }
    this.forgetBefore(record.timestampMs - 2 * SEAL_WINDOW_MS);
    const where = `${record.partition}@${record.offset}`;
    const earlier = this.seen.get(seal.seal);
    if (earlier !== undefined && earlier.where !== where)
      return this.drop(at, `replayed: its seal was taken at ${earlier.where}`);
    if (earlier === undefined) this.seen.set(seal.seal, { where, atMs: record.timestampMs });
    return true;
  }

  private drop(at: string, problem: string): false {
    recordWorkerRefusal('unsealed');
    this.options.onProblem(
      `${at}: no valid gateway seal (${problem}): not written by a gateway with this secret; dropped`,
    );
    return false;
  }

  private forgetBefore(ms: number): void {
    for (const [seal, { atMs }] of this.seen) {
      if (atMs >= ms) return;
      this.seen.delete(seal);
    }
  }
}
