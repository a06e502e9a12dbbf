import type { CallSlots } from './call-slots.js';

export interface AdmissionLimits {
  readonly maxQueuedCallsPerSubject: number;
  readonly maxQueuedCalls: number;
}

/** What became of a record handed to `Admission.admit`. */
export type Admitted = 'handled' | 'queued' | 'refused';

/** One share's records waiting for a slot, in log order. */
interface Line {
  tail: Promise<void>;
  length: number;
}

/**
 * Between a partition's reader and the call slots: a request whose sender (its share) cannot have
 * a slot now waits in its share's line, and the reader goes on — so one subject's backlog never
 * stands in front of another subject's requests on the same partition. A share's records stay in
 * log order: while its line is not empty, its later records join it. A full line refuses
 * (the caller answers the request); too many waiting in all lines stops the reader
 * (backpressure to the log, not memory).
 *
 * A waiting request's offset is not done, so it is not committed: a worker that stops or loses
 * the partition leaves it to the partition's next owner.
 */
export class Admission {
  private readonly lines = new Map<string, Line>();
  private waiting = 0;

  constructor(
    private readonly slots: CallSlots,
    private readonly limits: AdmissionLimits,
    private readonly onProblem: (problem: string, error?: unknown) => void,
  ) {}

  /** Requests waiting in every line. */
  get queued(): number {
    return this.waiting;
  }

  /**
   * Handles one record of `share`: at once when its share has no line and (for a request that
   * takes a slot) a slot is free for it; else at the end of its share's line.
   * `ordered: false` — answers to the server's requests and cancellations — never wait in a line:
   * a running call may be waiting for them.
   */
  async admit(
    share: string,
    record: { takesSlot: boolean; ordered: boolean; at: string },
    handle: () => Promise<void>,
  ): Promise<Admitted> {
    const line = this.lines.get(share);
    if (
      !record.ordered ||
      (line === undefined && (!record.takesSlot || this.slots.freeFor(share)))
    ) {
      await handle();
      return 'handled';
    }
    if (record.takesSlot && (line?.length ?? 0) >= this.limits.maxQueuedCallsPerSubject)
      return 'refused';
    const joined = line ?? { tail: Promise.resolve(), length: 0 };
    this.lines.set(share, joined);
    joined.length++;
    this.waiting++;
    const done = joined.tail
      .then(handle)
      .catch((error: unknown) => this.onProblem(`${record.at}: failed after waiting`, error))
      .finally(() => {
        this.waiting--;
        if (--joined.length === 0 && this.lines.get(share) === joined) this.lines.delete(share);
      });
    joined.tail = done;
    if (this.waiting > this.limits.maxQueuedCalls) await done;
    return 'queued';
  }
}
