import {
  messageOf,
  ErrorCodes,
  invalidOption,
  backoffMs,
  positiveInteger,
  isTidemarkError,
  TidemarkError,
  type LogPort,
  type LogRecord,
} from '@tidemark/protocol';
import { SharedReads } from './shared-reads.js';

export interface TailListener {
  /** Records in offset order; every offset from the subscription's start exactly once. */
  onRecords(records: readonly LogRecord[]): void;
  /** The subscription ended: the records it needed are gone (`TIDEMARK_OFFSET_OUT_OF_RANGE`) or the tail closed. */
  onError(error: TidemarkError): void;
  /**
   * Asked before each read while the subscriber catches up on its own: a promise to wait for
   * when it cannot take more yet (its client reads slower than the log), or undefined.
   */
  ready?(): Promise<void> | undefined;
}

export interface Subscription {
  close(): void;
}

export interface PartitionTailOptions {
  port: LogPort;
  topic: string;
  partition: number;
  /**
   * Long-poll wait of one fetch at the tail.
   * @default 500 ms
   */
  maxWaitMs?: number;
  /**
   * Wait before retrying a retryable failure (broker down, leader moving).
   * @default 200 ms, doubling to 5 s
   */
  retryBackoffMs?: number;
}

export const PARTITION_TAIL_DEFAULTS = { maxWaitMs: 500, retryBackoffMs: 200 } as const;
const MAX_BACKOFF_MS = 5_000;
/**
 * A catch-up read's size: the first small, doubling up to a size a slow reader's buffer can take
 * in one go (a subscriber waits with `ready` between reads).
 */
const CATCH_UP_FIRST_BYTES = 32 * 1024;
const CATCH_UP_MAX_BYTES = 256 * 1024;

interface Subscriber {
  readonly listener: TailListener;
  /** Live subscribers get records from here on; catching-up ones read the log themselves first. */
  from: bigint;
  live: boolean;
  closed: boolean;
}

/**
 * One shared reader of one partition: it fetches from an offset (no consumer group), starts when
 * the first subscriber arrives and stops when the last leaves. A subscriber may start anywhere: it
 * catches up with its own reads and joins the shared tail at the exact offset the tail had reached,
 * so it sees every record once, with no gap and no duplicate at the seam. The partition's log start
 * offset and high watermark are tracked from fetch answers. Out-of-range is reported, never reset.
 */
export class PartitionTail {
  private readonly port: LogPort;
  readonly topic: string;
  readonly partition: number;
  private readonly maxWaitMs: number;
  private readonly retryBackoffMs: number;
  private readonly subscribers = new Set<Subscriber>();
  private running = false;
  private stopped = false;
  /** Where the shared tail reads next; meaningful while running. */
  private next = 0n;
  private offsets = { logStartOffset: -1n, highWatermark: -1n };
  /** The catching-up subscribers' reads, shared when they want them at once (a resume storm). */
  private readonly reads: SharedReads;

  constructor(options: PartitionTailOptions) {
    this.port = options.port;
    this.topic = options.topic;
    this.partition = options.partition;
    this.reads = new SharedReads(
      (offset, maxBytes) =>
        this.port.fetch(this.topic, this.partition, offset, { maxWaitMs: 0, maxBytes }),
      CATCH_UP_MAX_BYTES,
    );
    this.maxWaitMs = options.maxWaitMs ?? PARTITION_TAIL_DEFAULTS.maxWaitMs;
    this.retryBackoffMs = options.retryBackoffMs ?? PARTITION_TAIL_DEFAULTS.retryBackoffMs;
    if (!Number.isInteger(this.maxWaitMs) || this.maxWaitMs < 0)
      throw invalidOption('maxWaitMs', 'a non-negative integer', this.maxWaitMs);
    positiveInteger('retryBackoffMs', this.retryBackoffMs);
  }

  /** The last log start offset and high watermark seen (-1 before the first fetch). */
  get logStartOffset(): bigint {
    return this.offsets.logStartOffset;
  }

  get highWatermark(): bigint {
    return this.offsets.highWatermark;
  }

  /** Where the shared tail will read next, or undefined when it is not running. */
  get position(): bigint | undefined {
    return this.running ? this.next : undefined;
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /**
   * Delivers every record from `fromOffset` on, then live records as they arrive. `liveFrom`, when
   * the caller knows the partition's end (a resume read its high watermark): a tail not running
   * yet starts there, and the records before it are read by the subscriber's own catch-up reader,
   * at its pace (`TailListener.ready`).
   */
  subscribe(fromOffset: bigint, listener: TailListener, liveFrom?: bigint): Subscription {
    if (this.stopped)
      throw new TidemarkError(
        ErrorCodes.closed,
        `tail of ${this.topic}/${this.partition} is closed`,
      );
    const subscriber: Subscriber = { listener, from: fromOffset, live: false, closed: false };
    this.subscribers.add(subscriber);
    if (!this.running) {
      this.next = liveFrom !== undefined && liveFrom > fromOffset ? liveFrom : fromOffset;
      subscriber.live = fromOffset >= this.next;
      this.start();
      if (!subscriber.live) void this.catchUp(subscriber);
    } else if (fromOffset >= this.next) {
      subscriber.live = true;
    } else {
      void this.catchUp(subscriber);
    }
    return { close: () => this.remove(subscriber) };
  }

  /** Ends every subscription and stops reading. */
  close(): void {
    this.stopped = true;
    for (const subscriber of [...this.subscribers])
      this.fail(subscriber, new TidemarkError(ErrorCodes.closed, 'the tail was closed'));
  }

  private start(): void {
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.subscribers.size > 0 && !this.stopped) {
      try {
        const result = await this.port.fetch(this.topic, this.partition, this.next, {
          maxWaitMs: this.maxWaitMs,
        });
        failures = 0;
        this.offsets = {
          logStartOffset: result.logStartOffset,
          highWatermark: result.highWatermark,
        };
        // Advancing the position and dispatching happen in one synchronous step: a catching-up
        // subscriber that compares with `next` sees either both or neither.
        const from = this.next;
        this.next = result.nextOffset;
        if (result.records.length > 0) {
          for (const subscriber of [...this.subscribers]) {
            if (subscriber.live) this.handTo(subscriber, result.records, from);
          }
        }
      } catch (error) {
        const failure = asTidemarkError(error);
        if (failure.code === ErrorCodes.offsetOutOfRange || !failure.retryable) {
          // The tail's own position was evicted (or the log is gone): every reader has a hole,
          // catching-up ones too, since they read below the tail's position.
          for (const subscriber of [...this.subscribers]) this.fail(subscriber, failure);
          break;
        }
        await sleep(this.backoff(failures++));
      }
    }
    this.running = false;
  }

  /** The wait after `failures` failed reads in a row: the tail's first wait, doubling to 5 s. */
  private backoff(failures: number): number {
    return backoffMs(failures, { initialMs: this.retryBackoffMs, maxMs: MAX_BACKOFF_MS });
  }

  private async catchUp(subscriber: Subscriber): Promise<void> {
    let cursor = subscriber.from;
    let failures = 0;
    // Small reads first, doubling: a resume of a few events (thousands of clients reconnecting at
    // once) decodes kilobytes, not a megabyte each, and a long replay's first events go out sooner.
    let maxBytes = CATCH_UP_FIRST_BYTES;
    while (!subscriber.closed) {
      await subscriber.listener.ready?.();
      if (subscriber.closed) return;
      let result;
      try {
        result = await this.reads.read(cursor, maxBytes);
        maxBytes = Math.min(maxBytes * 2, CATCH_UP_MAX_BYTES);
      } catch (error) {
        const failure = asTidemarkError(error);
        if (failure.code === ErrorCodes.offsetOutOfRange || !failure.retryable)
          return this.fail(subscriber, failure);
        await sleep(this.backoff(failures++));
        continue;
      }
      if (subscriber.closed) return;
      if (!this.running) {
        // The shared tail stopped meanwhile: continue as its first subscriber from here.
        this.handTo(subscriber, result.records, cursor);
        this.next = result.nextOffset;
        subscriber.from = result.nextOffset;
        subscriber.live = true;
        this.start();
        return;
      }
      const seam = this.next;
      this.handTo(
        subscriber,
        result.records.filter((r) => r.offset < seam),
        cursor,
      );
      if (result.nextOffset >= seam) {
        // Everything below the seam is delivered; the tail delivers from the seam on.
        subscriber.from = seam > cursor ? seam : cursor;
        subscriber.live = true;
        return;
      }
      if (result.nextOffset <= cursor) {
        // No progress below the seam (a transient empty answer): never skip ahead, read again.
        await sleep(this.backoff(failures++));
        continue;
      }
      cursor = result.nextOffset;
    }
  }

  private handTo(subscriber: Subscriber, records: readonly LogRecord[], from: bigint): void {
    if (subscriber.closed) return;
    const start = subscriber.from > from ? subscriber.from : from;
    const wanted =
      records[0] !== undefined && records[0].offset >= start
        ? records
        : records.filter((r) => r.offset >= start);
    if (wanted.length === 0) return;
    try {
      subscriber.listener.onRecords(wanted);
    } catch (error) {
      this.fail(
        subscriber,
        new TidemarkError(ErrorCodes.invalidArgument, `a tail listener threw: ${String(error)}`, {
          cause: error,
        }),
      );
    }
  }

  private fail(subscriber: Subscriber, error: TidemarkError): void {
    if (subscriber.closed) return;
    this.remove(subscriber);
    try {
      subscriber.listener.onError(error);
    } catch {
      // A listener failing to take its own error has nowhere else to report it.
    }
  }

  private remove(subscriber: Subscriber): void {
    subscriber.closed = true;
    this.subscribers.delete(subscriber);
  }
}

function asTidemarkError(error: unknown): TidemarkError {
  if (isTidemarkError(error) && error instanceof TidemarkError) return error;
  return new TidemarkError(ErrorCodes.logUnavailable, messageOf(error), {
    cause: error,
    retryable: true,
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
