import { partitionForSession, type LogPort, type SessionId } from '@tidemark/protocol';
import { CompactedTable } from './compacted-table.js';

// What the `subscriptions` table holds about event streams, keyed so that a stream's records are
// in its own partition (the one its occurrences and its source's owner have):
// - `lease:<stream>` — someone polls or streams it until `untilMs`: its source should run;
// - `source:<stream>` — where its source resumes: the position recorded with the occurrence at
//   `offset` of `occurrences`.

/** Header of a record of the table: its format version. */
const REGISTRY_HEADER = 'tm-evreg';
const REGISTRY_VERSION = '1';

/** Interest in a stream that no webhook subscription records: a poller's or a push stream's. */
export interface StreamLease {
  readonly stream: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly untilMs: number;
}

/** Where a stream's source resumes. */
export interface SourceHead {
  readonly position: string;
  /** The offset in `occurrences` of the occurrence that recorded it. */
  readonly offset: bigint;
}

type RegistryValue =
  | ({ readonly kind: 'lease' } & StreamLease)
  | { readonly kind: 'source'; readonly position: string; readonly offset: string };

export interface EventRegistryOptions {
  readonly port: LogPort;
  /** The `subscriptions` topic. */
  readonly topic: string;
  readonly partitionCount: number;
}

/** The leases and source heads of event streams, over the compacted `subscriptions` topic. */
export class EventRegistry {
  private readonly table: CompactedTable<RegistryValue>;

  constructor(private readonly options: EventRegistryOptions) {
    this.table = new CompactedTable<RegistryValue>({
      port: options.port,
      topic: options.topic,
      decode: decodeValue,
      encode: (value) => Buffer.from(JSON.stringify(value)),
      headers: () => [[REGISTRY_HEADER, REGISTRY_VERSION]],
    });
  }

  /** The partition of a stream, in this table and in `occurrences`. */
  partitionOf(stream: string): number {
    return partitionForSession(stream as SessionId, this.options.partitionCount);
  }

  /** Records that someone wants `stream` until `lease.untilMs`. */
  renewLease(lease: StreamLease): Promise<void> {
    return this.table.put(this.partitionOf(lease.stream), leaseKey(lease.stream), {
      kind: 'lease',
      ...lease,
    });
  }

  /**
   * The leases of a partition as of now (read to its end first): the live ones, and the streams
   * of those that ran out (for `dropLeases`).
   */
  async leases(
    partition: number,
    nowMs: number,
  ): Promise<{ live: StreamLease[]; expired: string[] }> {
    await this.table.catchUp(partition);
    const live: StreamLease[] = [];
    const expired: string[] = [];
    for (const [key] of [...this.table.entries(partition)]) {
      if (!key.startsWith(LEASE_PREFIX)) continue;
      const value = await this.table.get(partition, key);
      if (value?.kind !== 'lease') continue;
      const { kind: _kind, ...lease } = value;
      if (lease.untilMs > nowMs) live.push(lease);
      else expired.push(lease.stream);
    }
    return { live, expired };
  }

  /** Tombstones the leases of streams nobody wants any more (the table stays small). */
  dropLeases(partition: number, streams: readonly string[]): Promise<void> {
    return this.table.deleteMany(partition, streams.map(leaseKey));
  }

  async sourceHead(stream: string): Promise<SourceHead | undefined> {
    const value = await this.table.get(this.partitionOf(stream), SOURCE_PREFIX + stream);
    return value?.kind === 'source'
      ? { position: value.position, offset: BigInt(value.offset) }
      : undefined;
  }

  putSourceHead(stream: string, head: SourceHead): Promise<void> {
    return this.table.put(this.partitionOf(stream), SOURCE_PREFIX + stream, {
      kind: 'source',
      position: head.position,
      offset: head.offset.toString(),
    });
  }

  /** Forgets a partition this process no longer owns. */
  release(partition: number): void {
    this.table.release(partition);
  }
}

const LEASE_PREFIX = 'lease:';
const SOURCE_PREFIX = 'source:';

function leaseKey(stream: string): string {
  return LEASE_PREFIX + stream;
}

function decodeValue(
  value: Uint8Array,
  headers: ReadonlyArray<readonly [string, string]>,
): RegistryValue | undefined {
  if (!headers.some(([name, v]) => name === REGISTRY_HEADER && v === REGISTRY_VERSION))
    return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(value).toString('utf8')) as Partial<RegistryValue>;
    if (parsed.kind === 'lease')
      return typeof parsed.stream === 'string' &&
        typeof parsed.name === 'string' &&
        typeof parsed.untilMs === 'number' &&
        typeof parsed.arguments === 'object' &&
        parsed.arguments !== null
        ? (parsed as RegistryValue)
        : undefined;
    if (parsed.kind === 'source')
      return typeof parsed.position === 'string' && /^\d+$/.test(String(parsed.offset))
        ? (parsed as RegistryValue)
        : undefined;
    return undefined;
  } catch {
    return undefined;
  }
}
