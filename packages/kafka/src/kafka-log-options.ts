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
   * Consumer-group session timeout: how soon a dead member's partitions move.
   * @default 10 s
   */
  groupSessionTimeoutMs?: number;
}

export const KAFKA_LOG_DEFAULTS = {
  clientId: 'tidemark',
  fetchMaxBytes: 1 << 20,
  groupSessionTimeoutMs: 10_000,
} as const;

/** The options with their defaults, checked: a bad value fails here, before any connection. */
export function compileKafkaLogOptions(
  options: KafkaLogOptions,
): Required<Pick<KafkaLogOptions, 'clientId' | 'fetchMaxBytes' | 'groupSessionTimeoutMs'>> {
  if (options.brokers === undefined || options.brokers.length === 0)
    throw invalidOption('brokers', 'a non-empty list of host:port', options.brokers);
  const compiled = {
    clientId: options.clientId ?? KAFKA_LOG_DEFAULTS.clientId,
    fetchMaxBytes: options.fetchMaxBytes ?? KAFKA_LOG_DEFAULTS.fetchMaxBytes,
    groupSessionTimeoutMs:
      options.groupSessionTimeoutMs ?? KAFKA_LOG_DEFAULTS.groupSessionTimeoutMs,
  };
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
