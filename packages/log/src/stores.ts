import {
  decodeStreamHead,
  encodeStreamHead,
  HEAD_STATE_HEADER,
  streamHeadKey,
  type LogPort,
  type PartitionKey,
  type StreamHead,
  type StreamId,
  type TopicNames,
} from '@tidemark/protocol';
import { KeyedTable } from './keyed-table.js';
import { decidedHead } from './decided-head.js';

export interface StoreOptions {
  port: LogPort;
  topics: TopicNames;
  partitionCount: number;
  /** Decoded values each store keeps in memory at most (an LRU); the rest are read on demand. */
  cacheEntries?: number;
}

export interface SessionStoreOptions extends StoreOptions {
  /**
   * Whether `get` returns the stored `initialize` request. A gateway needs only the version and the
   * subject; a worker restoring a session needs it. Default true.
   */
  withInitialize?: boolean;
}

/** Index flag of a head that holds a finished stream's final result. */
export const TERMINAL_HEAD = 1;

/** A stream head with the trace context of the execution that wrote it (empty: untraced). */
export interface TracedStreamHead {
  readonly head: StreamHead;
  readonly traceHeaders: ReadonlyArray<readonly [string, string]>;
}

/** Stream heads from the compacted `streams` topic, as the worker last wrote them. */
export class StreamHeadStore extends KeyedTable<TracedStreamHead> {
  constructor(private readonly options: StoreOptions) {
    super(options.partitionCount, {
      port: options.port,
      topic: options.topics.streams,
      decode: (value, headers) => {
        const head = decodeStreamHead(Buffer.from(value).toString());
        return head === undefined ? undefined : { head, traceHeaders: headers };
      },
      encode: ({ head }) => Buffer.from(encodeStreamHead(head)),
      flags: (record) => {
        const state = record.headers.find(([name]) => name === HEAD_STATE_HEADER)?.[1];
        // Heads written before the header existed are decoded once, here.
        const terminal =
          state === undefined
            ? record.value !== null &&
              decodeStreamHead(Buffer.from(record.value).toString())?.terminal !== undefined
            : state === 'terminal';
        return terminal ? TERMINAL_HEAD : 0;
      },
      ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }),
    });
  }

  /** Tombstones heads of one partition by key. */
  forget(partition: number, keys: readonly string[]): Promise<void> {
    return this.table.deleteMany(partition, keys);
  }

  /** The stored head, read up to the `streams` partition's high watermark of now. */
  async get(session: PartitionKey, stream: StreamId): Promise<StreamHead | undefined> {
    return (await this.getTraced(session, stream))?.head;
  }

  /**
   * The stored head as `events` decides it: a finished head whose generation lost to a newer one
   * (its worker finished after its partition had moved) gives way to the newer, unfinished head.
   * What a worker asks before it runs a request again, or skips it as done.
   */
  async decided(session: PartitionKey, stream: StreamId): Promise<StreamHead | undefined> {
    const stored = await this.get(session, stream);
    if (stored === undefined) return undefined;
    const { port, topics } = this.options;
    return decidedHead(port, topics.events, this.partitionOf(session), session, stored);
  }

  /**
   * Where the stored head of a stream is in `streams`, as of the last read of its partition (a
   * `get` or `decided` just before): what orders it against other records there.
   */
  storedAt(session: PartitionKey, stream: StreamId): bigint | undefined {
    return this.table.entry(this.partitionOf(session), streamHeadKey(session, stream))?.offset;
  }

  /** The stored head and the trace of the call that wrote it. */
  getTraced(session: PartitionKey, stream: StreamId): Promise<TracedStreamHead | undefined> {
    return this.table.get(this.partitionOf(session), streamHeadKey(session, stream));
  }
}

/** What a session is, kept in the compacted `sessions` topic so any replica can serve it. */
export interface SessionRecord {
  readonly id: PartitionKey;
  readonly protocolVersion: string;
  /** The client's `initialize` request: replayed to restore the server's view of the client. */
  readonly initialize: unknown;
  /** The authenticated subject the session is bound to, when auth is on. */
  readonly subject?: string;
  readonly createdAtMs: number;
  /**
   * Set when the record is a task's (the Tasks extension): its id is the key, its stream is
   * `TASK_STREAM` under that key. A task is not a session: the session lane never serves it.
   */
  readonly task?: { readonly ttlMs: number | null; readonly pollIntervalMs: number };
  /**
   * Set when the record is an idempotency key's claim (a keyed `tools/call` of the stateless lane,
   * under the key derived from it; a keyed task's record holds it too). Not a session either.
   */
  readonly idempotency?: IdempotencyClaim;
}

/** The call an idempotency key belongs to: later requests with the key get its outcome. */
export interface IdempotencyClaim {
  /** `callFingerprint` of the call's tool and arguments. */
  readonly fingerprint: string;
  /**
   * The session whose stream the execution is, for a session's keyed call; absent for the
   * stateless lane's (its stream is under the key).
   */
  readonly session?: PartitionKey;
  /** The stream of the request that is the execution (its final message is the outcome). */
  readonly stream: StreamId;
  /** The stream whose durable steps the execution journals: the first request's, always. */
  readonly journal: StreamId;
}

/** Sessions over the compacted `sessions` topic: create, look up, end (tombstone). */
export class SessionStore extends KeyedTable<SessionRecord, PartitionKey> {
  constructor(options: SessionStoreOptions) {
    super(options.partitionCount, {
      port: options.port,
      topic: options.topics.sessions,
      decode: decodeSession,
      encode: (record) => Buffer.from(JSON.stringify(record)),
      ...(options.withInitialize === false
        ? { keep: (record: SessionRecord) => ({ ...record, initialize: undefined }) }
        : {}),
      ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }),
    });
  }

  /** Tombstones sessions of one partition (expired). */
  endMany(partition: number, sessions: readonly PartitionKey[]): Promise<void> {
    return this.table.deleteMany(partition, sessions);
  }

  create(record: SessionRecord): Promise<void> {
    return this.table.put(this.partitionOf(record.id), record.id, record);
  }

  get(session: PartitionKey): Promise<SessionRecord | undefined> {
    return this.table.get(this.partitionOf(session), session);
  }

  end(session: PartitionKey): Promise<void> {
    return this.table.delete(this.partitionOf(session), session);
  }
}

function decodeSession(value: Uint8Array): SessionRecord | undefined {
  try {
    const record = JSON.parse(Buffer.from(value).toString()) as Partial<SessionRecord>;
    if (
      typeof record.id !== 'string' ||
      typeof record.protocolVersion !== 'string' ||
      typeof record.createdAtMs !== 'number'
    )
      return undefined;
    return record as SessionRecord;
  } catch {
    return undefined;
  }
}
