import { ErrorCodes, TidemarkError } from '@tidemark/protocol';

interface ProtocolErrorLike {
  apiId?: unknown;
  canRetry?: unknown;
  message?: unknown;
}

/** Kafka protocol errors that mean "your metadata is stale": refresh and try again. */
const STALE_METADATA = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_ID',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'NOT_CONTROLLER',
  'INCONSISTENT_TOPIC_ID',
]);

function innerErrors(error: unknown): ProtocolErrorLike[] {
  if (error instanceof AggregateError)
    return error.errors.flatMap((inner: unknown) => innerErrors(inner));
  return typeof error === 'object' && error !== null ? [error] : [];
}

/** The Kafka `apiId`s inside anything the client threw (a ResponseError wraps them). */
export function kafkaApiIds(error: unknown): string[] {
  return innerErrors(error)
    .map((inner) => inner.apiId)
    .filter((id): id is string => typeof id === 'string');
}

export function isStaleMetadata(error: unknown): boolean {
  return kafkaApiIds(error).some((id) => STALE_METADATA.has(id));
}

/**
 * Turns whatever the Kafka client threw into a typed Tidemark error, once, at this boundary. Safe
 * on foreign errors: anything unknown is "log unavailable", retryable, with the original as cause.
 */
export function toTidemarkError(error: unknown, context: string): TidemarkError {
  if (error instanceof TidemarkError) return error;
  const ids = kafkaApiIds(error);
  if (ids.includes('OFFSET_OUT_OF_RANGE')) {
    return new TidemarkError(ErrorCodes.offsetOutOfRange, `${context}: offset out of range`, {
      cause: error,
    });
  }
  if (ids.includes('UNKNOWN_TOPIC_OR_PARTITION') || ids.includes('UNKNOWN_TOPIC_ID')) {
    return new TidemarkError(ErrorCodes.unknownTopic, `${context}: unknown topic or partition`, {
      cause: error,
      retryable: true,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new TidemarkError(ErrorCodes.logUnavailable, `${context}: ${message}`, {
    cause: error,
    retryable: true,
  });
}
