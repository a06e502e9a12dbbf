// The MCP protocol revisions Tidemark speaks, named once for the gateway, the worker and the CLI.

/**
 * Revisions of the session lane: a session (`Mcp-Session-Id`), SSE event ids and resume with
 * `Last-Event-ID`.
 */
export const SESSION_PROTOCOL_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25'] as const;

/** A session-lane request without `MCP-Protocol-Version` is this revision (the spec's rule). */
export const DEFAULT_SESSION_PROTOCOL_VERSION = '2025-03-26';

/** The first revision with priming events (an id before any message): resumable before any event. */
export const PRIMING_PROTOCOL_VERSION = '2025-11-25';

/** The revision of the stateless lane: no sessions, a `_meta` envelope on every request. */
export const STATELESS_PROTOCOL_VERSION = '2026-07-28';

/** True for the stateless lane's revision and any later one (revisions are ISO dates). */
export function isStatelessRevision(value: unknown): value is string {
  return typeof value === 'string' && value >= STATELESS_PROTOCOL_VERSION;
}

/** Prefix of the four topics' names unless told otherwise: `tidemark.requests`, … */
export const DEFAULT_TOPIC_PREFIX = 'tidemark.';
