import { context, trace, type Context } from '@opentelemetry/api';
import {
  encodeRequestRecord,
  partitionForSession,
  SESSION_TOUCHED,
  type LogPort,
  type RequestRecord,
  type SessionId,
} from '@tidemark/protocol';
import { startMessagingSpan, traceHeaders } from '@tidemark/otel';

/**
 * Writes what clients send to `requests`, for the worker that owns each session's partition: the
 * one place the gateway appends there, through the protocol's request-record codec.
 */
export class RequestProducer {
  constructor(
    private readonly port: LogPort,
    private readonly topic: string,
    private readonly partitionCount: number,
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
          return { ...encoded, partition, headers: [...encoded.headers, ...traced] };
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
      sessions.map((session) => ({
        ...encodeRequestRecord({ lane: 'control', session, control: SESSION_TOUCHED }),
        partition: partitionForSession(session, this.partitionCount),
      })),
    );
  }
}
