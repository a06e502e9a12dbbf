import { ErrorCodes, messageOf, TidemarkError } from '@tidemark/protocol';

interface ProtocolErrorLike {
  apiId?: unknown;
  canRetry?: unknown;
  message?: unknown;
  /** The broker's own words (the response's error message), when it sent any. */
  serverErrorMessage?: unknown;
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

/**
 * What the broker said, for people: each protocol error's name and the broker's own message
 * ("INVALID_REPLICATION_FACTOR: … only 1 broker(s) are registered"), instead of the client's
 * summary ("Creating topics failed.").
 */
function describeKafkaError(error: unknown): string {
  const said = innerErrors(error)
    .filter((inner) => typeof inner.apiId === 'string')
    .map((inner) => {
      const words = [inner.serverErrorMessage, inner.message].find(
        (text): text is string => typeof text === 'string' && text !== '',
      );
      return words === undefined ? String(inner.apiId) : `${String(inner.apiId)}: ${words}`;
    });
  if (said.length > 0) return [...new Set(said)].join('; ');
  // No protocol error: the innermost causes say it (a failed SASL handshake, a TLS error).
  const leaves = leafMessages(error);
  const summary = messageOf(error);
  return leaves.length === 0 || (leaves.length === 1 && leaves[0] === summary)
    ? summary
    : `${summary} ${[...new Set(leaves)].join('; ')}`;
}

function leafMessages(error: unknown, depth = 0): string[] {
  if (depth > 8 || typeof error !== 'object' || error === null) return [];
  const inner =
    error instanceof AggregateError
      ? error.errors
      : 'cause' in error && error.cause !== undefined
        ? [error.cause]
        : [];
  if (inner.length === 0)
    return error instanceof Error && error.message !== '' ? [error.message] : [];
  return inner.flatMap((e: unknown) => leafMessages(e, depth + 1));
}

/** A refusal retrying cannot fix: every protocol error in it says it cannot be retried. */
function isRefusal(error: unknown): boolean {
  const inner = innerErrors(error).filter((e) => typeof e.apiId === 'string');
  return inner.length > 0 && inner.every((e) => e.canRetry === false);
}

function isStaleMetadata(error: unknown): boolean {
  return kafkaApiIds(error).some((id) => STALE_METADATA.has(id));
}

/**
 * Whether a failed request should drop the cached leaders: the broker said they moved, or no broker
 * answered at all (connection refused or closed, a timeout) — a killed leader says nothing, and a
 * client that keeps asking it would never learn of the new one.
 */
export function needsFreshMetadata(error: unknown): boolean {
  return isStaleMetadata(error) || kafkaApiIds(error).length === 0;
}

/**
 * Turns whatever the Kafka client threw into a typed Tidemark error, once, at this boundary, with
 * the broker's own reason in the message. Safe on foreign errors: a refusal the broker says cannot
 * be retried is "broker refused"; anything else is "log unavailable", retryable; the original is
 * the cause.
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
  if (isRefusal(error)) {
    return new TidemarkError(ErrorCodes.brokerRefused, `${context}: ${describeKafkaError(error)}`, {
      cause: error,
    });
  }
  return new TidemarkError(ErrorCodes.logUnavailable, `${context}: ${describeKafkaError(error)}`, {
    cause: error,
    retryable: true,
  });
}
