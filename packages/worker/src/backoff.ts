/**
 * Waits before the next try of something the log refused: 100 ms doubling to 5 s, with jitter so
 * that the workers of a cluster that lost a broker do not retry in step.
 */
export function backoff(failures: number): Promise<void> {
  const ms = Math.min(5_000, 100 * 2 ** failures) * (0.5 + Math.random() / 2);
  return new Promise((resolve) => setTimeout(resolve, ms));
}
