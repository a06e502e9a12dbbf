import {
  JsonRpcErrorCodes,
  SignalErrorCodes,
  STATELESS_PROTOCOL_VERSION,
} from '@tidemark/protocol';

// Every refusal the gateway answers over HTTP, in one table: the status, the JSON-RPC code, the
// message and the reason it is counted under (`tidemark.gateway.refusals`). It mirrors the table
// "What a stranger can send" in docs/how-to/security.md (and docs/reference/errors.md, generated); `test/gateway` checks the answers on the wire.

/** One refusal: a JSON-RPC error as the whole HTTP answer. */
export interface HttpRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  /** What the refusal is counted under in `tidemark.gateway.refusals`. */
  readonly reason: string;
  /** Headers the answer carries (`Allow`, `Retry-After`, `WWW-Authenticate`, `Connection`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** The request's id, when it could be read. */
  readonly id?: string | number | null;
  readonly data?: unknown;
}

const { invalidRequest, invalidParams, badRequest, parseError } = JsonRpcErrorCodes;

function refusal(
  status: number,
  code: number,
  message: string,
  reason = 'other',
  headers?: Record<string, string>,
): HttpRefusal {
  return headers === undefined
    ? { status, code, message, reason }
    : { status, code, message, reason, headers };
}

export const HttpRefusals = {
  /** A signal's URL (`ex.signal`) whose token is not one, or whose signal expired or is gone. */
  signalUnknown: (detail = 'no such signal, or it expired') =>
    refusal(404, SignalErrorCodes.unknown, `Not found: ${detail}`, 'signal'),
  /** A signal answered before: it takes one answer. */
  signalAnswered: (detail: string) => refusal(409, SignalErrorCodes.answered, detail, 'signal'),
  /** An answer that fails the signal's schema (or its size): the signal stays open. */
  signalInvalid: (detail: string) => refusal(400, SignalErrorCodes.invalid, detail, 'signal'),
  /** The log failed or did not answer in time: the detail says which, the id is the request's. */
  logUnavailable: (detail?: string, id?: string | number) => ({
    ...refusal(
      503,
      badRequest,
      detail === undefined
        ? 'The log is unavailable; retry'
        : `The log is unavailable (${detail}); retry`,
      'other',
      { 'Retry-After': '1' },
    ),
    ...(id === undefined ? {} : { id }),
  }),
  origin: () => refusal(403, badRequest, 'Forbidden: Origin not allowed', 'origin'),
  host: () => refusal(403, badRequest, 'Forbidden: Host not allowed', 'host'),
  /** A declared length past the limit: refused unread, and the connection closes. */
  declaredBodyTooLarge: (maxBodyBytes: number) =>
    refusal(413, badRequest, `Request body larger than ${maxBodyBytes} bytes`, 'body-size', {
      Connection: 'close',
    }),
  bodyTooLarge: (maxBodyBytes: number) =>
    refusal(413, badRequest, `Request body larger than ${maxBodyBytes} bytes`, 'body', {
      Connection: 'close',
    }),
  notJson: () => refusal(400, parseError, 'Parse error: the body is not JSON', 'body'),
  charset: () => refusal(415, badRequest, 'Unsupported Media Type: the body must be UTF-8', 'body'),
  encoding: () =>
    refusal(
      415,
      badRequest,
      'Unsupported Media Type: Content-Encoding must be identity, gzip or deflate',
      'body',
    ),
  badBody: (status: number) => refusal(status, badRequest, 'Bad request body', 'body'),
  methodNotAllowed: () =>
    refusal(405, badRequest, 'Method not allowed', 'other', { Allow: 'GET, POST, DELETE' }),
  statelessHasNoSessions: () =>
    refusal(
      405,
      badRequest,
      `Method not allowed: protocol revision ${STATELESS_PROTOCOL_VERSION} has no sessions (POST only)`,
      'other',
      { Allow: 'POST' },
    ),
  contentType: () =>
    refusal(415, badRequest, 'Unsupported Media Type: Content-Type must be application/json'),
  acceptPost: () =>
    refusal(
      406,
      badRequest,
      'Not Acceptable: Accept must include application/json and text/event-stream',
    ),
  acceptGet: () =>
    refusal(406, badRequest, 'Not Acceptable: Accept must include text/event-stream'),
  unauthorized: (wwwAuthenticate: string) =>
    refusal(401, badRequest, 'Unauthorized', 'unauthorized', {
      'WWW-Authenticate': wwwAuthenticate,
    }),
  rateLimited: (retryAfterSeconds: number) =>
    refusal(
      429,
      badRequest,
      'Too many requests: slow down and retry after Retry-After',
      'rate-limit',
      {
        'Retry-After': String(retryAfterSeconds),
      },
    ),
  /** An address whose authentications failed too often: refused before its token is looked at. */
  tooManyFailedAuthentications: (retryAfterSeconds: number) =>
    refusal(
      429,
      badRequest,
      'Too many failed authentications from this address: retry after Retry-After',
      'auth-failures',
      { 'Retry-After': String(retryAfterSeconds) },
    ),
  /** Nesting found in the body's bytes, before `JSON.parse` does the work. */
  nestedTooDeep: (maxDepth: number) =>
    refusal(400, invalidRequest, `Invalid Request: nested deeper than ${maxDepth} levels`, 'body'),
  tooManySessions: (limit: number) =>
    refusal(
      429,
      badRequest,
      `Too many live sessions for this subject (limit ${limit}); end one (DELETE) or let one expire`,
      'sessions-per-subject',
    ),
  tooManySubjectStreams: (limit: number) =>
    refusal(
      429,
      badRequest,
      `Too many open streams for this subject (limit ${limit}); close one first`,
      'streams-per-subject',
    ),
  tooManyStreams: (limit: number) =>
    refusal(
      429,
      badRequest,
      `Too many open streams in this session (limit ${limit}); close one first`,
      'streams-per-session',
    ),
  /** A `Last-Event-ID` that does not verify or name a position of this session: the reason only. */
  invalidResume: (reason: string): HttpRefusal => ({
    ...refusal(
      400,
      JsonRpcErrorCodes.invalidRequest,
      `Invalid Last-Event-ID: ${reason}`,
      'invalid-resume',
    ),
    data: { reason },
  }),
  missingSession: () =>
    refusal(400, JsonRpcErrorCodes.badRequest, 'Bad Request: Mcp-Session-Id header is required'),
  unknownSession: () =>
    // 404 is what the spec tells a client to answer by starting a new session.
    refusal(404, JsonRpcErrorCodes.sessionNotFound, 'Session not found'),
  unsupportedVersion: (version: string, supported: readonly string[]) =>
    refusal(
      400,
      badRequest,
      `Bad Request: unsupported MCP-Protocol-Version ${JSON.stringify(version).slice(0, 64)} (supported: ${supported.join(', ')})`,
    ),
  initializeAlone: () =>
    refusal(400, invalidRequest, 'Invalid Request: initialize must be sent alone'),
  initializeNotRequest: () =>
    refusal(
      400,
      invalidRequest,
      'Invalid Request: initialize must be a request (with an id)',
      'invalid-request',
    ),
  initializeTooLarge: (bytes: number, maxBytes: number) =>
    refusal(
      400,
      invalidParams,
      `Invalid params: initialize params are ${bytes} bytes, more than the ${maxBytes} this server keeps`,
      'initialize-size',
    ),
  batchNotAllowed: () =>
    refusal(
      400,
      invalidRequest,
      'Invalid Request: JSON-RPC batches are not allowed in this protocol version',
    ),
  batchWithRequests: () =>
    refusal(
      400,
      invalidRequest,
      'Invalid Request: batches with requests are not supported; send requests one per POST',
    ),
  requestIdReused: (id: unknown) =>
    refusal(
      400,
      invalidRequest,
      `Invalid Request: request id ${JSON.stringify(id)} was already used in this session`,
    ),
  /** An idempotency key that is not one (empty, too long, not printable ASCII, two that differ). */
  badIdempotencyKey: (id: string | number | null, problem: string): HttpRefusal => ({
    ...refusal(400, invalidParams, `Invalid params: ${problem}`, 'idempotency-key'),
    id,
  }),
  /** A message the SDK's schemas refuse (its own code and message), answered with its id. */
  invalidMessage: (id: string | number | null, code: number, message: string): HttpRefusal => ({
    ...refusal(400, code, message, 'invalid-request'),
    id,
  }),
} as const;
