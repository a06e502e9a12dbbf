import type { RequestRecord } from '@tidemark/protocol';
import type { CallSlots } from './call-slots.js';

export interface AdmissionLimits {
  readonly maxQueuedCallsPerSubject: number;
  readonly maxQueuedCalls: number;
}

/** What became of a record handed to `Admission.admit`. */
export type Admitted = 'handled' | 'queued' | 'refused';

/** One session's (or stateless key's) records waiting, in log order. */
interface Line {
  tail: Promise<void>;
  length: number;
}

/**
 * Between a partition's reader and the call slots: a request whose sender (its share) cannot have
 * a slot now waits in a line — its session's, or its stateless key's — and the reader goes on, so
 * one subject's backlog never stands in front of another subject's requests on the same
 * partition. A session's records stay in log order: while its line is not empty, its later
 * records join it. Which waiting request gets a freed slot is the slots' fair choice. A share with
 * too many waiting is refused (the caller answers the request); too many waiting in all lines
 * stops the reader (backpressure to the log, not memory).
 *
 * A waiting request's offset is not done, so it is not committed: a worker that stops or loses
 * the partition leaves it to the partition's next owner.
 */
export class Admission {
  private readonly lines = new Map<string, Line>();
  /** Requests waiting, by share. */
  private readonly waitingBy = new Map<string, number>();
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
   * Handles one record of `share` in the line `lineKey` (its session, or its stateless key): at
   * once when that line is empty and (for a request that takes a slot) a slot is free for the
   * share; else at the end of the line. `ordered: false` — answers to the server's requests and
   * cancellations — never wait in a line: a running call may be waiting for them.
   */
  async admit(
    share: string,
    lineKey: string,
    record: { takesSlot: boolean; ordered: boolean; at: string },
    handle: () => Promise<void>,
  ): Promise<Admitted> {
    const line = this.lines.get(lineKey);
    const now = line === undefined && (!record.takesSlot || this.slots.freeFor(share));
    if (!record.ordered || now) {
      await handle();
      return 'handled';
    }
    const waitingOfShare = this.waitingBy.get(share) ?? 0;
    if (record.takesSlot && waitingOfShare >= this.limits.maxQueuedCallsPerSubject)
      return 'refused';
    const joined = line ?? { tail: Promise.resolve(), length: 0 };
    this.lines.set(lineKey, joined);
    joined.length++;
    this.waiting++;
    this.waitingBy.set(share, waitingOfShare + 1);
    const done = joined.tail
      .then(handle)
      .catch((error: unknown) => this.onProblem(`${record.at}: failed after waiting`, error))
      .finally(() => {
        this.waiting--;
        const left = (this.waitingBy.get(share) ?? 1) - 1;
        if (left === 0) this.waitingBy.delete(share);
        else this.waitingBy.set(share, left);
        if (--joined.length === 0 && this.lines.get(lineKey) === joined) this.lines.delete(lineKey);
      });
    joined.tail = done;
    if (this.waiting > this.limits.maxQueuedCalls) await done;
    return 'queued';
  }
}

/**
 * Whether a record takes a call slot (a request), and whether it keeps its place behind its
 * session's earlier records. Answers to the server's requests and cancellations do not wait: a
 * running call may be waiting for them.
 */
export function admissionOf(request: Exclude<RequestRecord, { lane: 'control' }>): {
  takesSlot: boolean;
  ordered: boolean;
} {
  const message = request.message as Record<string, unknown>;
  const isRequest = 'method' in message && 'id' in message;
  const cancels = message['method'] === 'notifications/cancelled' || request.lane === 'stateless';
  return {
    takesSlot: isRequest && request.lane !== 'keyed-session',
    ordered: 'method' in message && (isRequest || !cancels),
  };
}
