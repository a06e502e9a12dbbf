/**
 * Local error codes (string, `TIDEMARK_` prefix). Wire errors (HTTP status, JSON-RPC code) are
 * derived from outcomes in `wire.ts`, never thrown from here.
 */
export const ErrorCodes = {
  invalidOptions: 'TIDEMARK_INVALID_OPTIONS',
  invalidArgument: 'TIDEMARK_INVALID_ARGUMENT',
  malformedRecord: 'TIDEMARK_MALFORMED_RECORD',
  unsupportedVersion: 'TIDEMARK_UNSUPPORTED_VERSION',
  /** A read below the log start offset or past the high watermark; never auto-reset. */
  offsetOutOfRange: 'TIDEMARK_OFFSET_OUT_OF_RANGE',
  /** The log (broker, file) cannot be reached now; retryable. */
  logUnavailable: 'TIDEMARK_LOG_UNAVAILABLE',
  /** A topic is missing or its configuration contradicts what Tidemark needs. */
  topicMismatch: 'TIDEMARK_TOPIC_MISMATCH',
  unknownTopic: 'TIDEMARK_UNKNOWN_TOPIC',
  /** The broker refused a request and says retrying cannot help (an invalid config, no ACL). */
  brokerRefused: 'TIDEMARK_BROKER_REFUSED',
  closed: 'TIDEMARK_CLOSED',
  /** Another process has the embedded log's file open: one writer per file, by an OS lock. */
  logLocked: 'TIDEMARK_LOG_LOCKED',
  /** A tool module cannot be loaded, or its `register` fails: found at startup, before serving. */
  toolModule: 'TIDEMARK_TOOL_MODULE',
  /** A durable step's outcome cannot be journaled: larger than `maxStepBytes`, or not JSON. */
  stepNotJournaled: 'TIDEMARK_STEP_NOT_JOURNALED',
  /**
   * A call's steps in this code are not the ones its journal holds (a deploy changed them under a
   * call in flight): the replay stops instead of mixing two versions' effects.
   */
  journalMismatch: 'TIDEMARK_JOURNAL_MISMATCH',
  /** A webhook callback the policy refuses: not https, credentials in it, a non-public address. */
  webhookRefused: 'TIDEMARK_WEBHOOK_REFUSED',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const codes = new Set<string>(Object.values(ErrorCodes));

export interface TidemarkErrorOptions {
  cause?: unknown;
  /** Whether repeating the same operation may succeed (a transient condition). */
  retryable?: boolean;
}

export class TidemarkError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: TidemarkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TidemarkError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** True for a Tidemark error; safe on anything thrown, including foreign errors. */
export function isTidemarkError(value: unknown): value is TidemarkError {
  return (
    value instanceof TidemarkError ||
    (typeof value === 'object' &&
      value !== null &&
      'code' in value &&
      typeof value.code === 'string' &&
      codes.has(value.code))
  );
}

/** The message of anything thrown (an `Error`'s own, anything else as a string), for one line. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Bad options throw early as `TypeError`, naming the option and what it accepts. */
export function invalidOption(name: string, expected: string, got: unknown): TypeError {
  const shown = typeof got === 'string' ? JSON.stringify(got) : String(got);
  return Object.assign(new TypeError(`${name}: expected ${expected}, got ${shown}`), {
    code: ErrorCodes.invalidOptions,
  });
}

/** A positive integer option, or a `TypeError` naming it (`invalidOption`). */
export function positiveInteger(name: string, value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 1)
    throw invalidOption(name, 'a positive integer', value);
  return value as number;
}

/** Checks that each of `keys` in `options` is a positive integer (the first that is not throws). */
export function positiveIntegers<T extends object>(
  options: T,
  keys: ReadonlyArray<keyof T & string>,
): void {
  for (const key of keys) positiveInteger(key, options[key]);
}

/**
 * An http(s) URL option without a query or fragment, its trailing slashes dropped (paths are
 * appended to it): the URL as a string, or an `invalidOption` naming `name`.
 */
export function httpUrlOption(name: string, value: unknown): string {
  const expected = 'an http(s) URL without query or fragment, such as https://mcp.example.com/mcp';
  let url: URL;
  try {
    url = new URL(String(value));
  } catch {
    throw invalidOption(name, expected, value);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search !== '' || url.hash !== '')
    throw invalidOption(name, expected, value);
  return url.href.replace(/\/+$/, '');
}
