/** Fetches waiting for an append to their partition (Kafka's long poll), woken by the append. */
export class AppendWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves on the next append to `key`, or after `maxWaitMs`. */
  wait(key: string, maxWaitMs: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiting.get(key) ?? new Set();
      this.waiting.set(key, set);
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, maxWaitMs);
      set.add(wake);
    });
  }

  wake(key: string): void {
    const set = this.waiting.get(key);
    if (set !== undefined) for (const wake of [...set]) wake();
  }

  wakeAll(): void {
    for (const set of this.waiting.values()) for (const wake of [...set]) wake();
    this.waiting.clear();
  }
}
