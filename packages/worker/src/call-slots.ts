/**
 * The calls a worker runs at once: taking a slot waits while all are taken, so reading `requests`
 * waits too (backpressure to the log, not memory). A slot is released when its call's stream is
 * terminal, when the call never started, or when its session was closed under it.
 */
export class CallSlots {
  private running = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  /** Every slot is taken: readers wait for one (backpressure, not a wedge). */
  get full(): boolean {
    return this.running >= this.limit;
  }

  async acquire(): Promise<void> {
    while (this.running >= this.limit)
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.running++;
  }

  release(): void {
    this.running = Math.max(0, this.running - 1);
    this.waiters.shift()?.();
  }

  /** Gives a call's slot back while it waits (a task waiting for its client's input), then retakes it. */
  async idle<T>(waiting: Promise<T>): Promise<T> {
    this.release();
    try {
      return await waiting;
    } finally {
      await this.acquire();
    }
  }
}
