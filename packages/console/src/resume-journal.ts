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

export class ResumeJournal {
  private readonly entries: ResumeEntry[] = [];
  private readonly listeners = new Set<(entry: ResumeEntry) => void>();

  /** @param capacity decisions kept; older ones are forgotten. */
  constructor(readonly capacity = 500) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new TypeError(`capacity: expected a positive integer, got ${capacity}`);
  }

  /** Pass as `onResume` to `createGateway`. */
  readonly record = (entry: ResumeEntry): void => {
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.shift();
    for (const listener of this.listeners) listener(entry);
  };

  /** The kept decisions, newest first. */
  recent(): ResumeEntry[] {
    return [...this.entries].reverse();
  }

  /** Calls `listener` for each decision from now on; returns the unsubscribe. */
  listen(listener: (entry: ResumeEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
