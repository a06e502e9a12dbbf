import { hostname } from 'node:os';
import { positiveInteger } from '@tidemark/protocol';

// The resume decisions this process made, newest last, in a ring of bounded size. Decisions are
// not records in the log (a resume writes nothing), so the console of the process that made them
// is where they can be shown; every gateway also exports them as `mcp.resume` spans and the
// `tidemark.resume` metric.

/** One decision, as the gateway reports it (`GatewayOptions.onResume`). */
export interface ResumeEntry {
  readonly atMs: number;
  readonly session: string;
  readonly outcome: 'resume' | 'reset' | 'invalid';
  readonly reason: string;
  readonly stream?: string;
  readonly claimedGeneration?: string;
  readonly generation?: string;
  readonly detail?: string;
}

/** A decision as the journal keeps it: with the replica that made it. */
export interface JournalEntry extends ResumeEntry {
  readonly replica: string;
}

export interface ResumeJournalOptions {
  /** Decisions kept; older ones are forgotten. Default 500. */
  readonly capacity?: number;
  /** The name of the replica whose gateway feeds this journal. Default the host name. */
  readonly replica?: string;
}

export class ResumeJournal {
  readonly capacity: number;
  readonly replica: string;
  private readonly entries: JournalEntry[] = [];
  private readonly listeners = new Set<(entry: JournalEntry) => void>();

  constructor(options: ResumeJournalOptions = {}) {
    this.capacity = positiveInteger('capacity', options.capacity ?? 500);
    this.replica = options.replica ?? hostname();
    if (this.replica === '') throw new TypeError('replica: expected a name, got ""');
  }

  /** Pass as `onResume` to `createGateway`. */
  readonly record = (decision: ResumeEntry): void => {
    const entry: JournalEntry = { ...decision, replica: this.replica };
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.shift();
    for (const listener of this.listeners) listener(entry);
  };

  /** The kept decisions, newest first. */
  recent(): JournalEntry[] {
    return [...this.entries].reverse();
  }

  /** Calls `listener` for each decision from now on; returns the unsubscribe. */
  listen(listener: (entry: JournalEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
