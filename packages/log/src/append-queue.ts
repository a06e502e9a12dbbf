import type { AppendRecord, LogPort } from '@tidemark/protocol';

interface Pending {
  readonly record: AppendRecord;
  resolve(offset: bigint): void;
  reject(error: unknown): void;
}

/**
 * Serialises appends per partition of one topic: one append in flight per partition, with
 * everything queued meanwhile sent together as the next batch. Order per partition — and so per
 * stream — holds whatever the client does with concurrent sends, and a failure fails everything
 * queued behind it (nothing is written after a record that was not).
 */
export class AppendQueue {
  private readonly queues = new Map<number, Pending[]>();
  private readonly busy = new Set<number>();

  constructor(
    private readonly port: LogPort,
    readonly topic: string,
  ) {}

  append(record: AppendRecord): Promise<bigint> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(record.partition) ?? [];
      this.queues.set(record.partition, queue);
      queue.push({ record, resolve, reject });
      if (!this.busy.has(record.partition)) void this.drain(record.partition);
    });
  }

  private async drain(partition: number): Promise<void> {
    this.busy.add(partition);
    const queue = this.queues.get(partition) ?? [];
    while (queue.length > 0) {
      const batch = queue.splice(0, queue.length);
      try {
        const offsets = await this.port.append(
          this.topic,
          batch.map((p) => p.record),
        );
        batch.forEach((p, i) => p.resolve(offsets[i] as bigint));
      } catch (error) {
        // A failed batch fails what was queued behind it too: a writer that pipelines its records
        // must never see a later one land after a hole. Their generations fail and run again.
        for (const p of [...batch, ...queue.splice(0, queue.length)]) p.reject(error);
      }
    }
    this.busy.delete(partition);
  }
}
