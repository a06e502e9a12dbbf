/** What a step's function is given. */
export interface StepContext {
  /** The step's id in its call: its name, with `#2`, `#3` … for later steps of the same name. */
  readonly step: string;
  /**
   * A key that is the same in every execution of this step of this call, and different for every
   * other: pass it to the external API as *its* idempotency key, so a step that was still running
   * when its worker died charges once even though it runs again.
   */
  readonly effectKey: string;
  /** Which try this is: 1, then 2, 3 … when the step's `retry` policy runs it again. */
  readonly attempt: number;
}

/**
 * A durable step: `fn` runs once per call (tried again as `options.retry` says), its outcome
 * journaled; later executions replay it.
 */
export type StepFunction = <T>(
  name: string,
  fn: (step: StepContext) => T | Promise<T>,
  options?: StepOptions,
) => Promise<T>;

export interface StepOptions {
  /** How the step is tried again when `fn` throws. Default: it is not (its error is its outcome). */
  readonly retry?: StepRetryPolicy;
}

/**
 * How a step is tried again when its function throws, before its error becomes its outcome. The
 * wait before try n + 1 is `initialDelayMs × backoffFactor^(n − 1)`, at most `maxDelayMs` — or
 * what the error asks for (`retryAfterMs`, as an HTTP `Retry-After` says). The tries so far and
 * the time of the next are journaled: a worker that dies while the step waits does not start the
 * count again, and the next owner waits only what is left.
 */
export interface StepRetryPolicy {
  /** Tries in all, the first included. Default 3. */
  readonly maxAttempts?: number;
  /** The wait before the second try. Default 1 s. */
  readonly initialDelayMs?: number;
  /** Each wait is the one before times this (≥ 1). Default 2. */
  readonly backoffFactor?: number;
  /** The longest wait the backoff reaches (an error's own `retryAfterMs` may ask for more). Default 60 s. */
  readonly maxDelayMs?: number;
}

export const STEP_RETRY_DEFAULTS = {
  maxAttempts: 3,
  initialDelayMs: 1_000,
  backoffFactor: 2,
  maxDelayMs: 60_000,
} as const;

/** The longest wait between two tries of a step, whatever an error asks for. */
const MAX_STEP_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;

export type CompiledStepRetry = Required<StepRetryPolicy>;

/** Checks a step's retry policy and fills in its defaults; no policy: one try. */
export function compileStepRetry(policy: StepRetryPolicy | undefined): CompiledStepRetry {
  if (policy === undefined) return { ...STEP_RETRY_DEFAULTS, maxAttempts: 1 };
  if (typeof policy !== 'object' || policy === null)
    throw new TypeError(`step retry: expected an object, got ${String(policy)}`);
  const compiled = { ...STEP_RETRY_DEFAULTS, ...policy };
  const { maxAttempts, initialDelayMs, backoffFactor, maxDelayMs } = compiled;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000)
    throw new TypeError(`step retry.maxAttempts: expected an integer 1..1000, got ${maxAttempts}`);
  for (const [key, value] of [
    ['initialDelayMs', initialDelayMs],
    ['maxDelayMs', maxDelayMs],
  ] as const)
    if (!Number.isInteger(value) || value < 0 || value > MAX_STEP_RETRY_DELAY_MS)
      throw new TypeError(
        `step retry.${key}: expected an integer 0..${MAX_STEP_RETRY_DELAY_MS} (ms), got ${value}`,
      );
  if (typeof backoffFactor !== 'number' || !(backoffFactor >= 1) || backoffFactor > 100)
    throw new TypeError(`step retry.backoffFactor: expected a number 1..100, got ${backoffFactor}`);
  return compiled;
}

/**
 * The wait before the try after `attempt` failed with `error`, or undefined when the step is not
 * tried again: its tries are used up, or the error is a `NonRetryableError`.
 */
export function stepRetryDelay(
  policy: CompiledStepRetry,
  attempt: number,
  error: unknown,
): number | undefined {
  if (attempt >= policy.maxAttempts || error instanceof NonRetryableError) return undefined;
  const asked = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  if (typeof asked === 'number' && Number.isFinite(asked) && asked >= 0)
    return Math.min(Math.ceil(asked), MAX_STEP_RETRY_DELAY_MS);
  const { initialDelayMs, backoffFactor, maxDelayMs } = policy;
  return Math.min(maxDelayMs, Math.round(initialDelayMs * backoffFactor ** (attempt - 1)));
}

/**
 * Throw this from a step's function to end the step at once, whatever its retry policy: its error
 * is the step's outcome (a replay throws it again). For failures another try cannot mend — a
 * refused card, an invalid request.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/** One step a call ran or replayed (for `runTool` and the operator's view). */
export interface StepReport {
  readonly step: string;
  /** True when the outcome came from the journal and the function did not run. */
  readonly replayed: boolean;
  readonly ok: boolean;
  /** The tries it took (or, retrying, the tries so far). */
  readonly attempts: number;
  /** Set when this try failed and the step is tried again this much later (ms). */
  readonly retryInMs?: number;
}

/**
 * @deprecated Renamed `StepReport` ("event" is the Events extension's and the SSE id's word);
 * this alias goes in the next minor release.
 */
export type StepEvent = StepReport;

/** A step's error as the journal keeps it: what a replay throws again. */
export interface StepError {
  readonly name: string;
  readonly message: string;
  readonly code?: unknown;
  readonly data?: unknown;
}

/** A journaled step's error, thrown again when its step is replayed. */
export class StepFailedError extends Error {
  readonly code: unknown;
  readonly data: unknown;

  constructor(error: StepError) {
    super(error.message);
    this.name = error.name;
    this.code = error.code;
    this.data = error.data;
  }
}
