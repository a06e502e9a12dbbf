import {
  encodeRequestRecord,
  partitionForSession,
  sealRequestHeaders,
  SESSION_TOUCHED,
  type AppendRecord,
  type EncodedRequestRecord,
  type Keyring,
  type LogPort,
  type RequestRecord,
  type SessionId,
  type PartitionKey,
} from '@tidemark/protocol';

export interface RequestWriterOptions {
  readonly log: LogPort;
  /** The `requests` topic. */
  readonly topic: string;
  /** Its partition count: a key's records go to the partition its session's events share. */
  readonly partitionCount: number;
  /**
   * The gateways' keyring: every record is sealed with it, so a worker that reads one knows a
   * gateway (or a worker holding the same keyring) wrote it. Without one, records go unsealed —
   * a worker that verifies nothing, in development.
   */
  readonly keyring: Keyring | undefined;
}

/** A header a record carries as is: the trace context (`traceparent`, `tracestate`). */
export type PassedHeader = readonly [string, string];

/**
 * The one writer to `requests`: a gateway writing what its clients send, and a worker passing a
 * keyed request on to its session's partition, both encode through the protocol's request-record
 * codec, partition by key and seal here — so a record means the same whoever wrote it.
 */
export class RequestWriter {
  constructor(private readonly options: RequestWriterOptions) {}

  /** The partition of `requests` (and of `events`) a key's records go to. */
  partitionOf(key: PartitionKey): number {
    return partitionForSession(key, this.options.partitionCount);
  }

  /**
   * Appends the records of one key (a session, or a stateless request's routing key) in order,
   * each carrying `passed` (the trace context the worker continues from).
   */
  async write(
    key: PartitionKey,
    records: readonly RequestRecord[],
    passed: readonly PassedHeader[] = [],
  ): Promise<void> {
    const partition = this.partitionOf(key);
    await this.options.log.append(
      this.options.topic,
      records.map((record) => {
        const encoded = encodeRequestRecord(record);
        const headers = [
          ...encoded.headers,
          ...passed.map(([name, value]): [string, string] => [name, value]),
        ];
        return this.sealed({ ...encoded, headers }, partition);
      }),
    );
  }

  /** Tells the workers which sessions have open streams (they do not expire meanwhile). */
  async touch(sessions: readonly SessionId[]): Promise<void> {
    if (sessions.length === 0) return;
    await this.options.log.append(
      this.options.topic,
      sessions.map((session) =>
        this.sealed(
          encodeRequestRecord({ lane: 'control', session, control: SESSION_TOUCHED }),
          this.partitionOf(session),
        ),
      ),
    );
  }

  private sealed(encoded: EncodedRequestRecord, partition: number): AppendRecord {
    const { keyring } = this.options;
    const seal = keyring === undefined ? [] : sealRequestHeaders(keyring, encoded, partition);
    return { ...encoded, partition, headers: [...encoded.headers, ...seal] };
  }
}
