import type { ConnectionOptions } from '@platformatic/kafka';
import { invalidOption } from '@tidemark/protocol';

export interface KafkaLogOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: readonly string[];
  /**
   * Client id prefix seen by the brokers.
   * @default `tidemark`
   */
  clientId?: string;
  /** TLS and SASL for managed clusters, passed to the client's connections. */
  connection?: Pick<
    ConnectionOptions,
    'tls' | 'sasl' | 'tlsServerName' | 'connectTimeout' | 'requestTimeout'
  >;
  /**
   * Bytes one fetch may return per partition.
   * @default 1 MiB
   */
  fetchMaxBytes?: number;
  /**
   * Consumer-group session timeout: how soon a dead member's partitions move. On the consumer
   * protocol it is the group's `consumer.session.timeout.ms`, set when a member joins, within the
   * brokers' `group.consumer.min.session.timeout.ms` (45 s unless lowered).
   * @default 10 s
   */
  groupSessionTimeoutMs?: number;
  /**
   * The consumer-group protocol: `consumer` (KIP-848: the broker assigns, a scale event moves only
   * the partitions it must, nothing else pauses) — or `classic`. `auto`: the consumer protocol
   * unless the brokers refuse `groupSessionTimeoutMs` on it (their
   * `group.consumer.min.session.timeout.ms` is 45 s unless lowered, and a dead member's partitions
   * would wait that long); then the classic one, which allows it. A broker that refuses the
   * consumer protocol (before Kafka 4.0, or configured classic-only) gets the classic one. Each
   * fallback is said through `onProblem`.
   * @default 'auto'
   */
  groupProtocol?: 'auto' | 'consumer' | 'classic';
  /**
   * What the log reports that is not an error of a call (a protocol fallback, a setting the brokers
   * refused).
   * @default a line on stderr
   */
  onProblem?: (problem: string, error?: unknown) => void;
}

export const KAFKA_LOG_DEFAULTS = {
  clientId: 'tidemark',
  fetchMaxBytes: 1 << 20,
  groupSessionTimeoutMs: 10_000,
  groupProtocol: 'auto',
} as const;

type Compiled = Required<
  Pick<
    KafkaLogOptions,
    'clientId' | 'fetchMaxBytes' | 'groupSessionTimeoutMs' | 'groupProtocol' | 'onProblem'
  >
>;

/** The options with their defaults, checked: a bad value fails here, before any connection. */
export function compileKafkaLogOptions(options: KafkaLogOptions): Compiled {
  if (options.brokers === undefined || options.brokers.length === 0)
    throw invalidOption('brokers', 'a non-empty list of host:port', options.brokers);
  const compiled = {
    clientId: options.clientId ?? KAFKA_LOG_DEFAULTS.clientId,
    fetchMaxBytes: options.fetchMaxBytes ?? KAFKA_LOG_DEFAULTS.fetchMaxBytes,
    groupSessionTimeoutMs:
      options.groupSessionTimeoutMs ?? KAFKA_LOG_DEFAULTS.groupSessionTimeoutMs,
    groupProtocol: options.groupProtocol ?? KAFKA_LOG_DEFAULTS.groupProtocol,
    onProblem: options.onProblem ?? problemToStderr,
  };
  if (!['auto', 'consumer', 'classic'].includes(compiled.groupProtocol))
    throw invalidOption('groupProtocol', "'auto', 'consumer' or 'classic'", compiled.groupProtocol);
  if (!Number.isInteger(compiled.fetchMaxBytes) || compiled.fetchMaxBytes < 1024)
    throw invalidOption('fetchMaxBytes', 'an integer >= 1024', compiled.fetchMaxBytes);
  if (!Number.isInteger(compiled.groupSessionTimeoutMs) || compiled.groupSessionTimeoutMs < 1000)
    throw invalidOption(
      'groupSessionTimeoutMs',
      'an integer >= 1000',
      compiled.groupSessionTimeoutMs,
    );
  return compiled;
}

function problemToStderr(problem: string, error?: unknown): void {
  const detail =
    error === undefined
      ? ''
      : `: ${error instanceof Error ? error.message : JSON.stringify(error)}`;
  process.stderr.write(`tidemark kafka: ${problem}${detail}\n`);
}
