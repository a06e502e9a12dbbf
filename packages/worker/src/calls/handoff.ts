import type { HandoffNotices, StreamHeadStore } from '@tidemark/log';
import { recordHandoffCalls } from '@tidemark/otel';
import type { PartitionKey, StreamHead, StreamId, WorkerEpoch } from '@tidemark/protocol';
import type { PartitionReader } from './partition-reader.js';

// Graceful handoff of a partition between two workers, both sides.
//
// The group protocol moves a partition as soon as its owner lets go — and a Kafka client lets go
// at once (neither protocol's client here waits for the application). So the handoff is the
// workers': the old owner writes a notice (`HandoffNotices`) — "I run my calls of this partition
// until T" — stops starting anything there, and lets its calls end; the new owner serves the
// partition's new requests at once, and for a request whose stream an unfinished generation of
// the old owner holds, waits for that stream's own end instead of running it again (a reset the
// client would see). Only a call that outlives T is taken over.

/**
 * How long after getting a partition its new owner waits for the old owner's notice before it
 * decides the old owner is gone (killed: nobody will write one) and takes its calls over. On the
 * consumer protocol the old owner writes its notice before the group hears it let the partition
 * go; on the classic one, as it learns of the move — at the same time as the new owner. Also the
 * margin past a notice's deadline before a call is taken over without a release.
 */
const HANDOFF_NOTICE_MS = 1_000;
/** How far apart the clocks that stamp a request and the one that saw the move may be. */
const CLOCK_SKEW_MS = 5_000;
/** How often a waiting request looks whether its call ended or the handoff did. */
const HANDOFF_POLL_MS = 200;
/** How often a worker handing partitions off writes its notices again (their `beat`). */
const HANDOFF_BEAT_MS = 1_000;
/**
 * How long a notice's beat may stand still before its worker is taken for dead (killed mid-
 * handoff): five beats missed — a slow write is not a death — and far below a handoff timeout.
 */
const HANDOFF_SILENCE_MS = 5_000;

export interface HandoffOptions {
  readonly notices: HandoffNotices;
  readonly heads: StreamHeadStore;
  readonly epoch: WorkerEpoch;
  readonly timeoutMs: number;
  readonly onProblem: (problem: string, error?: unknown) => void;
}

/** A worker's side of handoffs: waiting for an old owner's calls, and handing its own over. */
export class Handoffs {
  private readonly assignedAtMs = new Map<number, number>();
  /** Partitions this worker wrote a notice for and has not released yet: until when, and its beat. */
  private readonly announced = new Map<
    number,
    { untilMs: number; beat: number; written: boolean }
  >();
  private beating: NodeJS.Timeout | undefined;
  /** The beat being written: a release waits for it, so no beat lands after it. */
  private beatWritten: Promise<void> = Promise.resolve();

  constructor(private readonly options: HandoffOptions) {}

  assigned(partition: number): void {
    this.assignedAtMs.set(partition, Date.now());
  }

  revoked(partition: number): void {
    this.assignedAtMs.delete(partition);
    this.options.notices.forget(partition);
  }

  /**
   * Whether a request may belong to a call the partition's previous owner was running: it was
   * written before (or just after: clocks differ) this worker got the partition. Requests written
   * later are new calls, so the lanes skip the extra head read for them (the hot path).
   */
  mayPredateAssignment(partition: number, writtenAtMs: number): boolean {
    const assignedAtMs = this.assignedAtMs.get(partition);
    return assignedAtMs !== undefined && writtenAtMs <= assignedAtMs + CLOCK_SKEW_MS;
  }

  /** Whether a stream's head is a call another worker's generation may still be finishing. */
  mayBeRunningElsewhere(head: StreamHead | undefined): head is StreamHead {
    return (
      head !== undefined &&
      head.terminal === undefined &&
      head.generation.epoch !== this.options.epoch
    );
  }

  /**
   * The head to decide a request by once the worker that runs its call is done with it: at once
   * when no other worker's generation is unfinished; else when that call ended (its terminal head)
   * or its worker gave it up — its notice released or expired, or no notice (it died).
   */
  async settle(
    session: PartitionKey,
    stream: StreamId,
    head: StreamHead | undefined,
    stopped: () => boolean,
  ): Promise<StreamHead | undefined> {
    const { heads, notices } = this.options;
    if (!this.mayBeRunningElsewhere(head)) return head;
    const partition = heads.partitionOf(session);
    const { epoch } = head.generation;
    let current: StreamHead | undefined = head;
    // The notice's beat as last seen changing, and when (this clock: the two workers' may differ).
    let beat = { value: -1, seenAtMs: Date.now() };
    while (
      !stopped() &&
      this.mayBeRunningElsewhere(current) &&
      current.generation.epoch === epoch
    ) {
      const notice = coveringNotice(
        await notices.get(partition, epoch),
        heads.storedAt(session, stream),
      );
      const now = Date.now();
      if (notice !== undefined && notice.beat !== beat.value)
        beat = { value: notice.beat, seenAtMs: now };
      if (notice === undefined) {
        const noticeDueMs = (this.assignedAtMs.get(partition) ?? 0) + HANDOFF_NOTICE_MS;
        if (now >= noticeDueMs) break;
      } else if (
        notice.released ||
        now >= notice.untilMs + HANDOFF_NOTICE_MS ||
        now - beat.seenAtMs >= HANDOFF_SILENCE_MS
      ) {
        // Released: the old owner stopped what it still ran before saying so. Past the deadline
        // without a release (it died meanwhile, or the release was lost), a margin more first:
        // one execution at a time. Its beat standing still: it died mid-handoff.
        return heads.decided(session, stream);
      }
      await new Promise((resolve) => setTimeout(resolve, HANDOFF_POLL_MS));
      current = await heads.decided(session, stream);
    }
    return current;
  }

  /**
   * This worker gives `readers`' partitions up: no request of theirs starts from now on, and a
   * notice says the calls running there go on until the handoff timeout. Resolves once the notices
   * are written (a notice that could not be written is reported: those calls are taken over).
   *
   * A notice for every partition, busy or not: a request read just before may still be starting
   * its call (past the checks that stop new ones), and without a notice its next owner would run
   * it too after the notice window.
   */
  async begin(readers: readonly PartitionReader[]): Promise<void> {
    const untilMs = Date.now() + this.options.timeoutMs;
    const announced = readers.filter((reader) => !reader.handingOff);
    for (const reader of readers) reader.handOff(untilMs);
    if (this.options.timeoutMs === 0) return;
    for (const reader of announced)
      this.announced.set(reader.partition, {
        untilMs: reader.handoffDeadlineMs ?? untilMs,
        beat: 0,
        written: false,
      });
    this.beating ??= setInterval(() => {
      this.beatWritten = this.beat();
    }, HANDOFF_BEAT_MS).unref();
    await Promise.all(announced.map((reader) => this.announce(reader.partition)));
  }

  /** Writes the notices again, each with its beat counted up, while their deadline is ahead. */
  private async beat(): Promise<void> {
    const now = Date.now();
    await Promise.all(
      [...this.announced].map(async ([partition, notice]) => {
        if (now >= notice.untilMs) return;
        notice.beat++;
        await this.announce(partition);
      }),
    );
  }

  private async announce(partition: number): Promise<void> {
    const notice = this.announced.get(partition);
    if (notice === undefined) return;
    try {
      await this.options.notices.announce(
        partition,
        this.options.epoch,
        notice.untilMs,
        notice.beat,
      );
      notice.written = true;
    } catch (error) {
      this.options.onProblem(`handoff notice for requests ${partition}`, error);
    }
  }

  /**
   * Whether the next owner of `partition` finds this worker's notice in the log: written before
   * the partition was lost (the consumer protocol releases it only after), so its calls may go on
   * until the deadline. Without one the next owner takes them over once its notice window passed.
   */
  noticeWritten(partition: number): boolean {
    return this.announced.get(partition)?.written === true;
  }

  /**
   * Waits for the calls of `readers` to end, up to the handoff deadline; counts those that did and
   * those left to the next owner, and says it is done (the next owner stops waiting).
   */
  async finish(readers: readonly PartitionReader[]): Promise<void> {
    await this.begin(readers);
    const busy = readers.filter((reader) => reader.runningCalls > 0);
    if (busy.length === 0) return;
    const running = () => busy.reduce((sum, reader) => sum + reader.runningCalls, 0);
    const before = running();
    await Promise.all(busy.map((reader) => reader.whenIdle(reader.handoffDeadlineMs ?? 0)));
    const left = running();
    recordHandoffCalls('finished', before - left);
    recordHandoffCalls('taken-over', left);
    if (left > 0)
      this.options.onProblem(
        `${left} call(s) outlived the handoff timeout (${this.options.timeoutMs} ms): the partition's next owner runs them again`,
      );
  }

  /** Tells the next owners of `partitions` that nothing of this worker runs there any more. */
  async released(partitions: readonly number[]): Promise<void> {
    const announced = partitions.filter((partition) => this.announced.delete(partition));
    if (this.announced.size === 0) {
      clearInterval(this.beating);
      this.beating = undefined;
    }
    await this.beatWritten;
    await Promise.all(
      announced.map((partition) =>
        this.options.notices
          .release(partition, this.options.epoch)
          .catch((error: unknown) =>
            this.options.onProblem(`handoff release for requests ${partition}`, error),
          ),
      ),
    );
  }
}

/**
 * The notice, unless it is a release from an earlier handoff of the same worker: one written
 * before the head of the call in question (`headAt`), so before that generation started — the
 * worker got the partition back since, and its notice for this handoff is not written yet. Such a
 * release says nothing of the call: it counts as no notice (wait for one), not as "nothing of
 * mine runs here" (take the call over while it still runs: two executions at once).
 */
function coveringNotice<Notice extends { readonly released: boolean; readonly offset: bigint }>(
  notice: Notice | undefined,
  headAt: bigint | undefined,
): Notice | undefined {
  if (notice === undefined || headAt === undefined) return notice;
  return notice.released && notice.offset < headAt ? undefined : notice;
}

/**
 * A stream's head as the log decides it — once the worker its partition came from finished the
 * call or gave it up (a handoff), when that worker's generation is unfinished. The one read every
 * lane decides a call by (`decideRun`).
 */
export async function settledHead(
  lane: {
    readonly stores: { readonly heads: StreamHeadStore };
    readonly handoffs?: Handoffs | undefined;
  },
  owner: PartitionKey,
  stream: StreamId,
  stopped: () => boolean,
): Promise<StreamHead | undefined> {
  const decided = await lane.stores.heads.decided(owner, stream);
  return lane.handoffs === undefined
    ? decided
    : lane.handoffs.settle(owner, stream, decided, stopped);
}
