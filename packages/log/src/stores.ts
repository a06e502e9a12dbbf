import {
  decodeStreamHead,
  encodeStreamHead,
  partitionForSession,
  streamHeadKey,
  type LogPort,
  type SessionId,
  type StreamHead,
  type StreamId,
  type TopicNames,
} from '@tidemark/protocol';
import { CompactedTable } from './compacted-table.js';

export interface StoreOptions {
  port: LogPort;
  topics: TopicNames;
  partitionCount: number;
}

/** A stream head with the trace context of the execution that wrote it (empty: untraced). */
export interface TracedStreamHead {
  readonly head: StreamHead;
  readonly traceHeaders: ReadonlyArray<readonly [string, string]>;
}

/** Stream heads from the compacted `streams` topic, as the worker last wrote them. */
export class StreamHeadStore {
  private readonly table: CompactedTable<TracedStreamHead>;

  constructor(private readonly options: StoreOptions) {
    this.table = new CompactedTable<TracedStreamHead>({
      port: options.port,
      topic: options.topics.streams,
      decode: (value, headers) => {
        const head = decodeStreamHead(Buffer.from(value).toString());
        return head === undefined ? undefined : { head, traceHeaders: headers };
      },
      encode: ({ head }) => Buffer.from(encodeStreamHead(head)),
    });
  }

  /** The stored head, read up to the `streams` partition's high watermark of now. */
  async get(session: SessionId, stream: StreamId): Promise<StreamHead | undefined> {
    return (await this.getTraced(session, stream))?.head;
  }

  /** The stored head and the trace of the call that wrote it. */
  getTraced(session: SessionId, stream: StreamId): Promise<TracedStreamHead | undefined> {
    return this.table.get(
      partitionForSession(session, this.options.partitionCount),
      streamHeadKey(session, stream),
    );
  }
}

/** What a session is, kept in the compacted `sessions` topic so any replica can serve it. */
export interface SessionRecord {
  readonly id: SessionId;
  readonly protocolVersion: string;
  /** The client's `initialize` request: replayed to restore the server's view of the client. */
  readonly initialize: unknown;
  /** The authenticated subject the session is bound to, when auth is on. */
  readonly subject?: string;
  readonly createdAtMs: number;
}

/** Sessions over the compacted `sessions` topic: create, look up, end (tombstone). */
export class SessionStore {
  private readonly table: CompactedTable<SessionRecord>;

  constructor(private readonly options: StoreOptions) {
    this.table = new CompactedTable<SessionRecord>({
      port: options.port,
      topic: options.topics.sessions,
      decode: decodeSession,
      encode: (record) => Buffer.from(JSON.stringify(record)),
    });
  }

  partitionOf(session: SessionId): number {
    return partitionForSession(session, this.options.partitionCount);
  }

  create(record: SessionRecord): Promise<void> {
    return this.table.put(this.partitionOf(record.id), record.id, record);
  }

  get(session: SessionId): Promise<SessionRecord | undefined> {
    return this.table.get(this.partitionOf(session), session);
  }

  end(session: SessionId): Promise<void> {
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
