import { ErrorCodes, isTidemarkError, type LogPort } from '@tidemark/protocol';

export interface CompactedTableOptions<V> {
  port: LogPort;
  topic: string;
  /** Reads a stored value (and its record's headers); undefined for one it does not understand. */
  decode(value: Uint8Array, headers: ReadonlyArray<readonly [string, string]>): V | undefined;
  encode(value: V): Uint8Array;
}

interface PartitionView<V> {
  readonly entries: Map<string, V>;
  next: bigint;
  catchingUp: Promise<void> | undefined;
}

/**
 * A key → value table over a compacted topic: the latest record of a key wins, a tombstone
 * removes it. `get` first reads the partition up to its current high watermark, so a value written
 * by any process before the call is seen (read-your-writes across replicas).
 *
 * Holds every live key of the partitions it has read: bounded by what compaction and tombstones
 * keep, not by a cache size.
 */
export class CompactedTable<V> {
  private readonly views = new Map<number, PartitionView<V>>();

  constructor(private readonly options: CompactedTableOptions<V>) {}

  async get(partition: number, key: string): Promise<V | undefined> {
    await this.catchUp(partition);
    return this.view(partition).entries.get(key);
  }

  async put(partition: number, key: string, value: V): Promise<void> {
    await this.options.port.append(this.options.topic, [
      { partition, key, value: this.options.encode(value) },
    ]);
  }

  async delete(partition: number, key: string): Promise<void> {
    await this.options.port.append(this.options.topic, [{ partition, key, value: null }]);
  }

  /** Reads the partition up to the high watermark of now. Concurrent callers share one read. */
  catchUp(partition: number): Promise<void> {
    const view = this.view(partition);
    view.catchingUp ??= this.readToEnd(view, partition).finally(() => {
      view.catchingUp = undefined;
    });
    return view.catchingUp;
  }

  private async readToEnd(view: PartitionView<V>, partition: number): Promise<void> {
    const { port, topic } = this.options;
    const { logStartOffset, highWatermark } = await port.offsets(topic, partition);
    if (view.next < logStartOffset) view.next = logStartOffset;
    while (view.next < highWatermark) {
      let result;
      try {
        result = await port.fetch(topic, partition, view.next);
      } catch (error) {
        // deleteRecords on a table is an operator's act; start over from what is left.
        if (isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange) {
          view.entries.clear();
          view.next = (await port.offsets(topic, partition)).logStartOffset;
          continue;
        }
        throw error;
      }
      for (const record of result.records) {
        if (record.key === null) continue;
        if (record.value === null) {
          view.entries.delete(record.key);
          continue;
        }
        const value = this.options.decode(record.value, record.headers);
        if (value !== undefined) view.entries.set(record.key, value);
      }
      view.next = result.nextOffset;
    }
  }

  private view(partition: number): PartitionView<V> {
    let view = this.views.get(partition);
    if (view === undefined) {
      view = { entries: new Map(), next: 0n, catchingUp: undefined };
      this.views.set(partition, view);
    }
    return view;
  }
}
