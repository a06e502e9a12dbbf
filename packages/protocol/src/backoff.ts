/** How long to wait before a next try. */
export interface BackoffOptions {
  /** The first wait. @default 100 */
  readonly initialMs?: number;
  /** The longest wait. */
  readonly maxMs: number;
  /**
   * A random half to all of the wait, so that processes that failed together (the workers of a
   * cluster that lost a broker, the clients of a gateway that drained) do not retry in step.
   * @default false
   */
  readonly jitter?: boolean;
}

/** Exponential backoff: the wait before try `attempt + 1` — `initialMs` doubling up to `maxMs`. */
export function backoffMs(attempt: number, options: BackoffOptions): number {
  const ms = Math.min(options.maxMs, (options.initialMs ?? 100) * 2 ** Math.min(attempt, 30));
  return options.jitter === true ? ms * (0.5 + Math.random() / 2) : ms;
}
