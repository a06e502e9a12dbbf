import { ErrorCodes, TidemarkError, type LogPort } from '@tidemark/protocol';

/** An operation on the log past its deadline; its message is safe to show a client. */
export class LogDeadlineError extends TidemarkError {
  constructor(what: string, ms: number) {
    super(ErrorCodes.logUnavailable, `the log did not answer ${what} within ${ms} ms`, {
      retryable: true,
    });
  }
}

/**
 * The log as a gateway's requests use it: each operation fails with `TIDEMARK_LOG_UNAVAILABLE`
 * once it has taken `timeoutMs` (beyond a fetch's own wait), and its client is answered 503. A
 * gateway cut from the brokers sees no error at all — its connections neither close nor refuse,
 * and the Kafka client retries for minutes — so without a deadline its clients waited past their
 * own timeouts (a network partition test, issue #56). An append that timed out may still land:
 * the answer says so.
 */
export function withDeadline(port: LogPort, timeoutMs: number): LogPort {
  const bounded = <T>(what: string, work: Promise<T>, extraMs = 0): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new LogDeadlineError(what, timeoutMs + extraMs)),
        timeoutMs + extraMs,
      );
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timer));
  };
  return {
    kind: port.kind,
    identity: (topic) => bounded('a metadata request', port.identity(topic)),
    partitionCount: (topic) => bounded('a metadata request', port.partitionCount(topic)),
    append: (topic, records) =>
      bounded('a write (it may still be written)', port.append(topic, records)),
    fetch: (topic, partition, from, options) =>
      bounded('a read', port.fetch(topic, partition, from, options), options?.maxWaitMs ?? 0),
    offsets: (topic, partition) => bounded('a read of offsets', port.offsets(topic, partition)),
    deleteRecordsBefore: (topic, partition, offset) =>
      bounded('a deletion', port.deleteRecordsBefore(topic, partition, offset)),
    close: () => port.close(),
  };
}
