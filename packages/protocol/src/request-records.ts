// What the gateway writes to `requests` besides the client's own messages: record headers the
// worker reads, named once here for both sides.

/** Header of a 2026-07-28 request: the SDK's classification of it, as JSON. */
export const CLASSIFICATION_HEADER = 'tm-classification';

/** Header of a 2026-07-28 request: the subject its gateway authenticated (it has no session). */
export const SUBJECT_HEADER = 'tm-subject';

/** Header of a control record: the gateway telling the session's worker something. */
export const CONTROL_HEADER = 'tm-control';

/** Control: the client ended its session (DELETE); cancel its running calls. */
export const SESSION_ENDED = 'session-ended';

/** The JSON-RPC notification a session-ended control record carries (never sent to a client). */
export const SESSION_ENDED_METHOD = 'notifications/tidemark/session-ended';

/** Control: a gateway holds an open stream of the session, so it is not idle (keeps it from expiring). */
export const SESSION_TOUCHED = 'session-touched';

/** The JSON-RPC notification a control record carries (never sent to a client). */
export const CONTROL_METHOD = 'notifications/tidemark/control';
