// The MCP protocol revisions Tidemark speaks, named once for the gateway, the worker and the CLI.

/**
 * Revisions of the session lane: a session (`Mcp-Session-Id`), SSE event ids and resume with
 * `Last-Event-ID`.
 */
export const SESSION_PROTOCOL_VERSIONS = [
  // Still asked for by deployed clients (the official TypeScript, Python and Go SDKs all list it
  // and the Go SDK can pin it); over Streamable HTTP its messages are a subset of 2025-03-26's.
  '2024-11-05',
  '2025-03-26',
  '2025-06-18',
  '2025-11-25',
] as const;

/** The newest session-lane revision: what `initialize` answers a revision it does not serve. */
const LATEST_SESSION_PROTOCOL_VERSION = '2025-11-25';

/**
 * The revision `initialize` agrees on (the spec's rule): the one the client asked for when the
 * session lane serves it, else the newest it serves. The gateway stores it as the session's
 * revision and the worker's server answers with it; both must compute it the same way.
 */
export function agreedSessionVersion(asked: unknown): string {
  return typeof asked === 'string' &&
    (SESSION_PROTOCOL_VERSIONS as readonly string[]).includes(asked)
    ? asked
    : LATEST_SESSION_PROTOCOL_VERSION;
}

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

/** Prefix of the topics' names unless told otherwise: `tidemark.requests`, … */
export const DEFAULT_TOPIC_PREFIX = 'tidemark.';
