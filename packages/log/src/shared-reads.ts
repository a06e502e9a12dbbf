import type { FetchResult } from '@tidemark/protocol';

interface Waiter {
  readonly maxBytes: number;
  resolve(result: FetchResult): void;
  reject(error: unknown): void;
}

/**
 * The catch-up reads of one partition, shared by the readers that want them at the same time.
 *
 * A reconnect storm is thousands of clients resuming at once, each a few events behind, at offsets
 * close to each other: one read each would fetch and decode the same stretch of the partition
 * thousands of times (a 32 KB read for ten events of one stream). Here one read is in flight per
 * partition, from the lowest offset asked for; when it returns, every reader whose offset it
 * covers gets it, and the next read starts from the lowest offset still waiting. A reader alone
 * reads as before, at once and at its own size; readers together read up to `sharedBytes`.
 */
export class SharedReads {
  private readonly waiting = new Map<bigint, Waiter[]>();
  private reading = false;

  constructor(
    private readonly fetchAt: (offset: bigint, maxBytes: number) => Promise<FetchResult>,
    private readonly sharedBytes: number,
  ) {}

  /** What a read from `offset` returns: possibly more, from lower, when it was shared. */
  read(offset: bigint, maxBytes: number): Promise<FetchResult> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(offset);
      const waiter = { maxBytes, resolve, reject };
      if (waiters === undefined) this.waiting.set(offset, [waiter]);
      else waiters.push(waiter);
      if (!this.reading) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.reading = true;
    while (this.waiting.size > 0) {
      let lowest: bigint | undefined;
      for (const offset of this.waiting.keys())
        if (lowest === undefined || offset < lowest) lowest = offset;
      const from = lowest!;
      const first = this.waiting.get(from)!;
      const asked = Math.max(...first.map((w) => w.maxBytes));
      const maxBytes = this.waiting.size > 1 ? Math.max(asked, this.sharedBytes) : asked;
      let result: FetchResult;
      try {
        result = await this.fetchAt(from, maxBytes);
      } catch (error) {
        // The read from `from` failed (evicted, broker away): its readers hear it and decide; the
        // others are read for next, from their own offsets.
        this.waiting.delete(from);
        for (const waiter of first) waiter.reject(error);
        continue;
      }
      // Everyone the answer covers; those at `from` always (an answer without progress is theirs
      // to retry). Others waiting beyond it stay for the next read.
      for (const [offset, waiters] of [...this.waiting]) {
        if (offset !== from && (offset < from || offset >= result.nextOffset)) continue;
        this.waiting.delete(offset);
        for (const waiter of waiters) waiter.resolve(result);
      }
    }
    this.reading = false;
  }
}
