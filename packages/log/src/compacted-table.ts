import { LRUCache } from 'lru-cache';
import {
  ErrorCodes,
  positiveInteger,
  isTidemarkError,
  TidemarkError,
  type LogPort,
  type LogRecord,
} from '@tidemark/protocol';

export interface CompactedTableOptions<V> {
  port: LogPort;
  topic: string;
  /** Reads a stored value (and its record's headers); undefined for one it does not understand. */
  decode(value: Uint8Array, headers: ReadonlyArray<readonly [string, string]>): V | undefined;
  encode(value: V): Uint8Array;
  /** Headers written with a value (what `flags` reads back without decoding it). */
  headers?(value: V): ReadonlyArray<readonly [string, string]>;
  /**
   * A few bits about a record kept in the index beside its offset (for sweeps that must not decode
   * every value, e.g. "this head is terminal"). Read from headers; default 0.
   */
  flags?(record: LogRecord): number;
  /** What of a value this process keeps in memory (its cache), when it needs less than all of it. */
  keep?(value: V): V;
  /**
   * Decoded values kept in memory at most.
   * @default 4,096
   */
  cacheEntries?: number;
  /**
   * Bytes of stored values (as written) kept decoded in memory at most.
   * @default 16 MiB
   */
  cacheBytes?: number;
}

export const COMPACTED_TABLE_DEFAULTS = { cacheEntries: 4_096, cacheBytes: 16 * 1024 * 1024 };

/** Where the latest record of a key is, and what the index knows of it without decoding it. */
export interface TableEntry {
  readonly offset: bigint;
  /** The record's timestamp (when it was written). */
  readonly timestampMs: number;
  readonly flags: number;
}

interface PartitionView {
  /** key → its latest record: an index, not the values (those are read on demand, then cached). */
  readonly index: Map<string, TableEntry>;
  next: bigint;
  catchingUp: Promise<void> | undefined;
}

/**
 * A cached value: decoded, or as the catch-up read it (decoded on its first `get`: most records a
 * catch-up passes are never asked for, and a record just written elsewhere — a head its worker
 * wrote, a session another gateway created — is the one about to be, often by many at once).
 */
type Cached<V> =
  | { readonly offset: bigint; readonly value: V }
  | {
      readonly offset: bigint;
      readonly raw: Uint8Array;
      readonly headers: ReadonlyArray<readonly [string, string]>;
    };

/** Attempts to read a key whose record compaction replaced between the catch-up and the read. */
const MAX_LOAD_ATTEMPTS = 4;

/**
 * A key → value table over a compacted topic: the latest record of a key wins, a tombstone
 * removes it. `get` first reads the partition up to its current high watermark, so a value written
 * by any process before the call is seen (read-your-writes across replicas).
 *
 * Memory is bounded by what is live, not by what was ever written: the table keeps an index (key →
 * offset of its latest record) of the partitions it has read, and a bounded LRU cache of values in
 * front of the log — the ones read last, by `get` or by the catch-up. A miss reads the one record
 * at its offset; a record compaction removed meanwhile (its key was written again, or tombstoned
 * and the tombstone cleaned) is found again by catching up, so a lookup is correct whatever the
 * cache holds.
 */
export class CompactedTable<V> {
  private readonly views = new Map<number, PartitionView>();
  private readonly cache: LRUCache<string, Cached<V>>;

  constructor(private readonly options: CompactedTableOptions<V>) {
    const max = positiveInteger(
      'cacheEntries',
      options.cacheEntries ?? COMPACTED_TABLE_DEFAULTS.cacheEntries,
    );
    const maxSize = positiveInteger(
      'cacheBytes',
      options.cacheBytes ?? COMPACTED_TABLE_DEFAULTS.cacheBytes,
    );
    this.cache = new LRUCache<string, Cached<V>>({ max, maxSize, sizeCalculation: () => 1 });
  }

  async get(partition: number, key: string): Promise<V | undefined> {
    await this.catchUp(partition);
    const view = this.view(partition);
    for (let attempt = 1; ; attempt++) {
      const entry = view.index.get(key);
      if (entry === undefined) return undefined;
      const cached = this.cache.get(cacheKey(partition, key));
      if (cached !== undefined && cached.offset === entry.offset) {
        if ('value' in cached) return cached.value;
        return this.decoded(partition, key, cached.offset, cached.raw, cached.headers);
      }
      const loaded = await this.load(partition, key, entry.offset);
      if (loaded.found) return loaded.value;
      // Compaction removed the record after the index saw it: a newer record of the key (or a
      // tombstone, possibly cleaned too) came after it. Catch up and look again.
      await this.catchUp(partition);
      if (view.index.get(key)?.offset === entry.offset) {
        view.index.delete(key);
        return undefined;
      }
      if (attempt >= MAX_LOAD_ATTEMPTS)
        throw new TidemarkError(
          ErrorCodes.logUnavailable,
          `${this.options.topic}/${partition}: key ${key} kept moving while it was read`,
          { retryable: true },
        );
    }
  }

  /** Writes a value; this process reads it back from memory until it is evicted. */
  async put(partition: number, key: string, value: V): Promise<void> {
    const bytes = this.options.encode(value);
    const headers = this.options.headers?.(value);
    const [offset] = await this.options.port.append(this.options.topic, [
      { partition, key, value: bytes, ...(headers === undefined ? {} : { headers }) },
    ]);
    this.remember(partition, key, offset!, value, bytes.length);
  }

  async delete(partition: number, key: string): Promise<void> {
    this.cache.delete(cacheKey(partition, key));
    await this.options.port.append(this.options.topic, [{ partition, key, value: null }]);
  }

  /** Tombstones many keys of one partition in one append. */
  async deleteMany(partition: number, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    for (const key of keys) this.cache.delete(cacheKey(partition, key));
    await this.options.port.append(
      this.options.topic,
      keys.map((key) => ({ partition, key, value: null })),
    );
  }

  /** Where a key's latest record is, as of the partition's last catch-up (a `get` makes one). */
  entry(partition: number, key: string): TableEntry | undefined {
    return this.views.get(partition)?.index.get(key);
  }

  /** The live keys of a partition as of its last catch-up, with where each is: for sweeps. */
  entries(partition: number): IterableIterator<[string, TableEntry]> {
    return this.view(partition).index.entries();
  }

  /** Live keys held in the index of every partition read (for tests and metrics). */
  get size(): number {
    let size = 0;
    for (const view of this.views.values()) size += view.index.size;
    return size;
  }

  /** Reads the partition up to the high watermark of now. Concurrent callers share one read. */
  catchUp(partition: number): Promise<void> {
    const view = this.view(partition);
    view.catchingUp ??= this.readToEnd(view, partition).finally(() => {
      view.catchingUp = undefined;
    });
    return view.catchingUp;
  }

  /** Forgets a partition this process no longer serves (its index and cached values). */
  release(partition: number): void {
    const view = this.views.get(partition);
    if (view === undefined) return;
    for (const key of view.index.keys()) this.cache.delete(cacheKey(partition, key));
    this.views.delete(partition);
  }

  private async readToEnd(view: PartitionView, partition: number): Promise<void> {
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
          view.index.clear();
          view.next = (await port.offsets(topic, partition)).logStartOffset;
          continue;
        }
        throw error;
      }
      for (const record of result.records) {
        if (record.key === null) continue;
        if (record.value === null) {
          view.index.delete(record.key);
          this.cache.delete(cacheKey(partition, record.key));
          continue;
        }
        // Map order is insertion order: a key written again moves to the end, so the index
        // iterates oldest-written first (sweeps can stop early).
        view.index.delete(record.key);
        view.index.set(record.key, {
          offset: record.offset,
          timestampMs: record.timestampMs,
          flags: this.options.flags?.(record) ?? 0,
        });
        // A copy: the record's bytes may be a view into the whole fetched batch, which the cache
        // (sized by the record's bytes) would keep alive. (`Buffer#slice` is a view, not a copy.)
        this.cache.set(
          cacheKey(partition, record.key),
          { offset: record.offset, raw: new Uint8Array(record.value), headers: record.headers },
          { size: Math.max(1, record.value.length) },
        );
      }
      view.next = result.nextOffset;
    }
  }

  /** Reads the record at `offset`; not found when compaction removed it (or it is not `key`'s). */
  private async load(
    partition: number,
    key: string,
    offset: bigint,
  ): Promise<{ found: true; value: V | undefined } | { found: false }> {
    let result;
    try {
      result = await this.options.port.fetch(this.options.topic, partition, offset, {
        maxBytes: 1,
      });
    } catch (error) {
      if (isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange)
        return { found: false };
      throw error;
    }
    const record = result.records.find((r) => r.offset === offset);
    if (record === undefined || record.key !== key || record.value === null)
      return { found: false };
    return {
      found: true,
      value: this.decoded(partition, key, offset, record.value, record.headers),
    };
  }

  /** Decodes a stored value and caches what is kept of it. */
  private decoded(
    partition: number,
    key: string,
    offset: bigint,
    raw: Uint8Array,
    headers: ReadonlyArray<readonly [string, string]>,
  ): V | undefined {
    const value = this.options.decode(raw, headers);
    if (value === undefined) return undefined;
    this.remember(partition, key, offset, value, raw.length);
    return this.options.keep?.(value) ?? value;
  }

  private remember(partition: number, key: string, offset: bigint, value: V, bytes: number): void {
    const kept = this.options.keep?.(value) ?? value;
    this.cache.set(cacheKey(partition, key), { offset, value: kept }, { size: Math.max(1, bytes) });
  }

  private view(partition: number): PartitionView {
    let view = this.views.get(partition);
    if (view === undefined) {
      view = { index: new Map(), next: 0n, catchingUp: undefined };
      this.views.set(partition, view);
    }
    return view;
  }
}

const cacheKey = (partition: number, key: string) => `${partition}\u0000${key}`;
