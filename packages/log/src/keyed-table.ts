import { partitionForSession, type PartitionKey } from '@tidemark/protocol';
import { CompactedTable, type CompactedTableOptions, type TableEntry } from './compacted-table.js';

/**
 * What every store over a compacted topic shares: its table, and the partition a key lives in —
 * its session's (or event stream's), so a store's records move with the partition, like the
 * session's requests and events. A store adds what its values mean; reading up, listing and
 * letting go of a partition are the same for all.
 */
export abstract class KeyedTable<V, K extends string = string> {
  protected readonly table: CompactedTable<V>;

  protected constructor(
    private readonly partitionCount: number,
    options: CompactedTableOptions<V>,
  ) {
    this.table = new CompactedTable<V>(options);
  }

  /** The partition `key` (a session id, or an event stream's key) lives in. */
  partitionOf(key: PartitionKey): number {
    return partitionForSession(key, this.partitionCount);
  }

  /** Reads a partition up to its high watermark of now (before a sweep). */
  catchUp(partition: number): Promise<void> {
    return this.table.catchUp(partition);
  }

  /** Every live key of a partition, with where its record is and its flags. */
  entries(partition: number): IterableIterator<[K, TableEntry]> {
    // Every key in the table was written by this store, as a K.
    return this.table.entries(partition) as IterableIterator<[K, TableEntry]>;
  }

  /** Drops what is held of a partition this process stopped serving. */
  release(partition: number): void {
    this.table.release(partition);
  }
}
