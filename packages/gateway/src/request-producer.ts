import { context, trace, type Context } from '@opentelemetry/api';
import {
  encodeRequestRecord,
  partitionForSession,
  sealRequestHeaders,
  SESSION_TOUCHED,
  type EncodedRequestRecord,
  type Keyring,
  type LogPort,
  type RequestRecord,
  type SessionId,
} from '@tidemark/protocol';
import { startMessagingSpan, traceHeaders } from '@tidemark/otel';

/**
 * Writes what clients send to `requests`, for the worker that owns each session's partition: the
 * one place the gateway appends there, through the protocol's request-record codec. Every record
 * is sealed with the gateways' keyring, so a worker that holds it knows a gateway wrote it — and
 * that the subject it names was authenticated.
 */
export class RequestProducer {
  constructor(
    private readonly port: LogPort,
    private readonly topic: string,
    private readonly partitionCount: number,
    private readonly keyring: Keyring,
  ) {}

  /**
   * Appends the records of one key (a session, or a stateless request's routing key) in order,
   * inside a `send` span whose context the worker continues from the record headers.
   */
  async produce(
    key: SessionId,
    records: readonly RequestRecord[],
    parent: Context = context.active(),
  ): Promise<void> {
    const partition = partitionForSession(key, this.partitionCount);
    const span = startMessagingSpan(
      { system: this.port.kind, operation: 'send', topic: this.topic, partition },
      parent,
    );
    const traced = traceHeaders(trace.setSpan(parent, span));
    try {
      await this.port.append(
        this.topic,
        records.map((record) => {
          const encoded = encodeRequestRecord(record);
          return this.sealed({ ...encoded, headers: [...encoded.headers, ...traced] }, partition);
        }),
      );
    } finally {
      span.end();
    }
  }

  /** Tells the workers which sessions have open streams here (they do not expire meanwhile). */
  async touch(sessions: readonly SessionId[]): Promise<void> {
    if (sessions.length === 0) return;
    await this.port.append(
      this.topic,
      sessions.map((session) =>
        this.sealed(
          encodeRequestRecord({ lane: 'control', session, control: SESSION_TOUCHED }),
          partitionForSession(session, this.partitionCount),
        ),
      ),
    );
  }

  private sealed(encoded: EncodedRequestRecord, partition: number) {
    const headers = [...encoded.headers, ...sealRequestHeaders(this.keyring, encoded, partition)];
    return { ...encoded, partition, headers };
  }
}
