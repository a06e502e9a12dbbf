import { context, trace, type Context } from '@opentelemetry/api';
import { RequestWriter } from '@tidemark/log';
import type { Keyring, LogPort, PartitionKey, RequestRecord, SessionId } from '@tidemark/protocol';
import { startMessagingSpan, traceHeaders } from '@tidemark/otel';

/**
 * What clients send, written to `requests` for the worker that owns each session's partition,
 * through the log's one `RequestWriter`: sealed with the gateways' keyring, so a worker that holds
 * a record knows a gateway wrote it — and that the subject it names was authenticated.
 */
export class RequestProducer {
  private readonly writer: RequestWriter;

  constructor(
    private readonly port: LogPort,
    private readonly topic: string,
    partitionCount: number,
    keyring: Keyring,
  ) {
    this.writer = new RequestWriter({ log: port, topic, partitionCount, keyring });
  }

  /**
   * Appends the records of one key (a session, or a stateless request's routing key) in order,
   * inside a `send` span whose context the worker continues from the record headers.
   */
  async produce(
    key: PartitionKey,
    records: readonly RequestRecord[],
    parent: Context = context.active(),
  ): Promise<void> {
    const partition = this.writer.partitionOf(key);
    const span = startMessagingSpan(
      { system: this.port.kind, operation: 'send', topic: this.topic, partition },
      parent,
    );
    try {
      await this.writer.write(key, records, traceHeaders(trace.setSpan(parent, span)));
    } finally {
      span.end();
    }
  }

  /** Tells the workers which sessions have open streams here (they do not expire meanwhile). */
  touch(sessions: readonly SessionId[]): Promise<void> {
    return this.writer.touch(sessions);
  }
}
