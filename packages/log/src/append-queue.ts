import type { AppendRecord, LogPort, PartedRecord } from '@tidemark/protocol';

interface Pending {
  /** A record, or one written in parts (its parts alone, one by one, then the record). */
  readonly record: AppendRecord | PartedRecord;
  resolve(offset: bigint): void;
  reject(error: unknown): void;
}

/**
 * The most value bytes one append sends together: the topics take 4 MiB + 64 KiB per batch, and a
 * batch holds everything queued for a partition. A larger record goes alone.
 */
const BATCH_BYTES = 1024 * 1024;

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

  /** Appends a record; resolves with its offset (a parted record's: the completing record's). */
  append(record: AppendRecord | PartedRecord): Promise<bigint> {
    const partition = partitionOf(record);
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(partition) ?? [];
      this.queues.set(partition, queue);
      queue.push({ record, resolve, reject });
      if (!this.busy.has(partition)) void this.drain(partition);
    });
  }

  private async drain(partition: number): Promise<void> {
    this.busy.add(partition);
    const queue = this.queues.get(partition) ?? [];
    while (queue.length > 0) {
      const batch = nextBatch(queue);
      try {
        const offsets = await this.write(batch);
        batch.forEach((p, i) => p.resolve(offsets[i] as bigint));
      } catch (error) {
        // A failed batch fails what was queued behind it too: a writer that pipelines its records
        // must never see a later one land after a hole. Their generations fail and run again.
        for (const p of [...batch, ...queue.splice(0, queue.length)]) p.reject(error);
      }
    }
    this.busy.delete(partition);
  }

  private async write(batch: readonly Pending[]): Promise<bigint[]> {
    const [first] = batch;
    if (first === undefined || !('parts' in first.record))
      return this.port.append(
        this.topic,
        batch.map((p) => p.record as AppendRecord),
      );
    // Each part is its own batch (one fills a record), then the record with where they are.
    const parted = first.record;
    let firstPart: bigint | undefined;
    for (const part of parted.parts) {
      const [offset] = await this.port.append(this.topic, [part]);
      firstPart ??= offset;
    }
    return this.port.append(this.topic, [parted.complete(firstPart!)]);
  }
}

function partitionOf(record: AppendRecord | PartedRecord): number {
  return 'parts' in record ? (record.parts[0]?.partition ?? 0) : record.partition;
}

/** The next records to send together: up to BATCH_BYTES of values, a parted record alone. */
function nextBatch(queue: Pending[]): Pending[] {
  let bytes = 0;
  let count = 0;
  for (const pending of queue) {
    const { record } = pending;
    if ('parts' in record) {
      if (count === 0) count = 1;
      break;
    }
    bytes += record.value?.length ?? 0;
    if (count > 0 && bytes > BATCH_BYTES) break;
    count++;
  }
  return queue.splice(0, count);
}
