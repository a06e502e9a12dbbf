/** JSON-RPC error codes used at the wire. -32000..-32099 are the implementation-defined range. */
export const JsonRpcErrorCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  invalidParams: -32602,
  internalError: -32603,
  badRequest: -32000,
  sessionNotFound: -32001,
  /** The Tasks extension: a tool that only runs as a task, asked by a client that cannot take one. */
  missingRequiredClientCapability: -32021,
  /** `tasks/stream` (SEP-2694): the events after the client's `after` are no longer held. */
  eventsGone: -32010,
  /** An event stream its type does not let this subject read (its `authorize` refused). */
  forbidden: -32003,
} as const;

/** The progress value of a message, if it is a `notifications/progress` with a numeric one. */
export function progressOf(message: unknown): number | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { method, params } = message as { method?: unknown; params?: { progress?: unknown } };
  if (method !== 'notifications/progress' || typeof params?.progress !== 'number') return undefined;
  return params.progress;
}
