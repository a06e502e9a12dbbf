// The Kafka error codes a group member acts on, and how a failed protocol call says its code.

/** Kafka error codes a group member acts on. */
export const KafkaErrors = {
  coordinatorLoadInProgress: 14,
  coordinatorNotAvailable: 15,
  notCoordinator: 16,
  unknownMemberId: 25,
  unsupportedVersion: 35,
  fencedMemberEpoch: 110,
} as const;

/**
 * Whether a failure means the coordinator is elsewhere or not ready (find it again, retry): its
 * codes, and a failure without one (the connection).
 */
export function coordinatorMoved(code: number | undefined): boolean {
  return (
    code === undefined ||
    code === KafkaErrors.notCoordinator ||
    code === KafkaErrors.coordinatorNotAvailable ||
    code === KafkaErrors.coordinatorLoadInProgress
  );
}

/** The Kafka error code of a failed call: the response's, or its first error's. */
export function codeOf(error: unknown): number | undefined {
  const response = (error as { response?: { errorCode?: unknown } } | undefined)?.response;
  if (typeof response?.errorCode === 'number') return response.errorCode;
  const first = (error as { errors?: Array<{ apiCode?: unknown }> } | undefined)?.errors?.[0];
  return typeof first?.apiCode === 'number' ? first.apiCode : undefined;
}
