import { backoffMs, isTidemarkError } from '@tidemark/protocol';

/**
 * Waits before the next try of something the log refused: 100 ms doubling to 5 s, with jitter so
 * that the workers of a cluster that lost a broker do not retry in step.
 */
export function backoff(failures: number): Promise<void> {
  const ms = backoffMs(failures, { maxMs: 5_000, jitter: true });
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How long a log that keeps refusing is waited out before the failure goes up. */
const UNAVAILABLE_LIMIT_MS = 60_000;

export interface WhileUnavailableOptions {
  /** True once the work no longer matters here (partition revoked, worker stopping): no retry. */
  stopped: () => boolean;
  /** Each refusal that will be retried. */
  onRetry: (error: unknown) => void;
}

/**
 * Runs `attempt` until it succeeds, waiting out (with backoff, up to a minute) a log that is briefly
 * unavailable — a leader or controller moving, an ISR below `min.insync.replicas`. Anything else,
 * a stop, or the minute passing throws the last error.
 */
export async function whileUnavailable<T>(
  attempt: () => Promise<T>,
  options: WhileUnavailableOptions,
): Promise<T> {
  const started = Date.now();
  for (let failures = 0; ; failures++) {
    try {
      return await attempt();
    } catch (error) {
      const retryable = isTidemarkError(error) && error.retryable;
      if (!retryable || options.stopped() || Date.now() - started > UNAVAILABLE_LIMIT_MS)
        throw error;
      options.onRetry(error);
      await backoff(failures);
    }
  }
}
