import { setTimeout as sleep } from 'node:timers/promises';
import type { StreamHeadStore } from '@tidemark/log';
import {
  backoffMs,
  ErrorCodes,
  isTidemarkError,
  type GroupMembership,
  type LogPort,
  type LogRecord,
} from '@tidemark/protocol';
import { recordPartitionLag } from '@tidemark/otel';
import { whileUnavailable } from '../execution/index.js';
import { OffsetTracker } from './offset-tracker.js';

export interface PartitionReaderOptions {
  log: LogPort;
  topic: string;
  partition: number;
  pollMs: number;
  /** Resolves with the group membership: a partition may be assigned before `joinGroup` returns. */
  membership: Promise<GroupMembership | undefined>;
  heads: StreamHeadStore;
  /** Handles one record, in order; the partition's next record waits for it. */
  onRecord: (record: LogRecord) => Promise<void>;
  onProblem: (problem: string, error?: unknown) => void;
}

/**
 * One partition of `requests` this worker owns: reads it in order from the committed offset, and
 * commits only a contiguous prefix of requests whose streams are terminal (a crash redelivers every
 * request not finished). Stateless requests' heads are tombstoned once their offset is committed.
 */
export class PartitionReader {
  /** Set once the committed offset is known: nothing is committed before. */
  private tracker: OffsetTracker | undefined;
  private readonly stopper = new AbortController();
  private lastCommitted: bigint | undefined;
  private readonly forgetAfterCommit: Array<{ offset: bigint; key: string }> = [];
  private readonly reading: Promise<void>;
  private beatAtMs = Date.now();
  /** Calls started from this partition and not ended. */
  private calls = 0;
  private idleWaiters: Array<() => void> = [];
  private handoffUntilMs: number | undefined;
  private fencedNow = false;

  constructor(private readonly options: PartitionReaderOptions) {
    this.reading = this.read().catch((error: unknown) =>
      options.onProblem(`partition ${options.partition} stopped`, error),
    );
  }

  get partition(): number {
    return this.options.partition;
  }

  /** When the read loop last came back from a fetch: a loop that stops beating is wedged. */
  get lastBeatMs(): number {
    return this.beatAtMs;
  }

  /**
   * A read of the log for one of this partition's records (at `offset`): a log briefly unavailable
   * (a leader or controller failover) is waited out while the partition stays here; a read it
   * refuses for longer fails.
   */
  whileUnavailable<T>(offset: bigint, read: () => Promise<T>): Promise<T> {
    const { topic, partition, onProblem } = this.options;
    return whileUnavailable(read, {
      stopped: () => this.stopper.signal.aborted,
      onRetry: (error) =>
        onProblem(`${topic} ${partition}@${offset}: the log is unavailable; retrying`, error),
    });
  }

  /** Aborted when the partition is revoked or the worker stops. */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  /**
   * The partition is being given up: from now on no request of it starts here (its next owner
   * runs them); the calls running go on until `untilMs`, and answers and cancellations for them
   * are still read. True once `handOff` was called.
   */
  handOff(untilMs: number): void {
    this.handoffUntilMs ??= untilMs;
  }

  get handingOff(): boolean {
    return this.handoffUntilMs !== undefined;
  }

  /**
   * The partition was lost with no handoff notice in the log (the group lease lapsed: cut off past
   * the session timeout, or a notice that could not be written): its next owner does not wait for
   * this worker's calls, so none of them may take another durable step here. For good: a partition
   * given back later gets a reader of its own.
   */
  fence(): void {
    this.fencedNow = true;
  }

  get fenced(): boolean {
    return this.fencedNow;
  }

  /** Until when the calls running go on (set by `handOff`). */
  get handoffDeadlineMs(): number | undefined {
    return this.handoffUntilMs;
  }

  /** Calls of this partition running now. */
  get runningCalls(): number {
    return this.calls;
  }

  callStarted(): void {
    this.calls++;
  }

  callEnded(): void {
    if (--this.calls > 0) return;
    this.calls = 0;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Resolves once no call of this partition runs, or at `untilMs`, whichever is first. */
  async whenIdle(untilMs: number): Promise<void> {
    if (this.calls === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.idleWaiters.push(resolve);
      timer = setTimeout(resolve, Math.max(0, untilMs - Date.now()));
    });
    clearTimeout(timer);
  }

  /** Stops reading and waits for the record in hand. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.reading;
  }

  /** The request at `offset` is finished: its offset may be committed. */
  done(offset: bigint): void {
    this.tracker?.done(offset);
  }

  /** Tombstones a stateless request's head once its offset is committed. */
  forgetOnCommit(offset: bigint, headKey: string): void {
    this.forgetAfterCommit.push({ offset, key: headKey });
  }

  async commit(membership: GroupMembership | undefined): Promise<void> {
    const offset = this.tracker?.committable();
    if (offset === undefined || this.lastCommitted === offset || membership === undefined) return;
    const { partition, onProblem } = this.options;
    try {
      await membership.commit(partition, offset);
      this.lastCommitted = offset;
    } catch (error) {
      onProblem(`commit requests ${partition}@${offset}`, error);
      return;
    }
    // Finished out of order, so filtered, not sliced.
    const committed = this.forgetAfterCommit.filter((entry) => entry.offset < offset);
    if (committed.length === 0) return;
    const pending = this.forgetAfterCommit.filter((entry) => entry.offset >= offset);
    this.forgetAfterCommit.splice(0, this.forgetAfterCommit.length, ...pending);
    await this.options.heads
      .forget(
        partition,
        committed.map((entry) => entry.key),
      )
      .catch((error: unknown) => onProblem(`forgetting stateless heads of ${partition}`, error));
  }

  private async read(): Promise<void> {
    const { log, topic, partition } = this.options;
    // Without waiting for the membership, the committed offset is unknown and the partition
    // would be read from its start.
    const committed = await this.committedOffset();
    if (this.signal.aborted) return;
    let next = committed ?? (await log.offsets(topic, partition)).logStartOffset;
    const tracker = new OffsetTracker(next);
    this.tracker = tracker;
    this.lastCommitted = committed;
    while (!this.signal.aborted) {
      this.beatAtMs = Date.now();
      const result = await this.fetch(next);
      this.beatAtMs = Date.now();
      if (result === 'closed') return;
      if (typeof result === 'bigint') {
        next = result;
        tracker.skipTo(next);
        continue;
      }
      for (const record of result?.records ?? []) {
        if (this.signal.aborted) return;
        tracker.read(record.offset, record.offset + 1n);
        await this.options.onRecord(record);
      }
      if (result === undefined) continue;
      next = result.nextOffset;
      tracker.skipTo(next);
      recordPartitionLag(partition, result.highWatermark - next);
    }
  }

  /**
   * The group's committed offset of the partition. A read can be refused for a while (a moving
   * coordinator, a rebalance where a membership reads as the member): asked again until it
   * answers or the partition is revoked — giving up would leave the partition unread until the
   * process restarts, as 0.1.0's workers do.
   */
  private async committedOffset(): Promise<bigint | undefined> {
    const { partition, onProblem } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        return await (await this.options.membership)?.committed(partition);
      } catch (error) {
        if (this.signal.aborted) return undefined;
        onProblem(`reading the committed offset of requests ${partition}; asking again`, error);
        // Cut short by a revocation: the loop then ends below.
        await sleep(backoffMs(attempt, { maxMs: 2_000 }), undefined, { signal: this.signal }).catch(
          () => undefined,
        );
        if (this.signal.aborted) return undefined;
      }
    }
  }

  /**
   * One fetch: the records, a new start offset when requests expired unread, `closed`, or
   * undefined after a failure (reported, then waited out).
   */
  private async fetch(next: bigint) {
    const { log, topic, partition, pollMs, onProblem } = this.options;
    try {
      return await log.fetch(topic, partition, next, { maxWaitMs: pollMs });
    } catch (error) {
      if (isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange) {
        // Requests expired before any worker read them: go on from what is left, and say so.
        const start = (await log.offsets(topic, partition)).logStartOffset;
        onProblem(`requests ${partition}: offsets ${next}..${start - 1n} expired unread`);
        return start;
      }
      if (isTidemarkError(error) && error.code === ErrorCodes.closed) return 'closed' as const;
      onProblem(`reading requests ${partition}`, error);
      await new Promise((resolve) => setTimeout(resolve, 500));
      return undefined;
    }
  }
}
