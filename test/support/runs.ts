/**
 * A property's or fuzzer's number of runs: `n` in the gate, `n / 20` in `npm run test:fast`
 * (TIDEMARK_FAST=1), where a developer wants a verdict in minutes and the gate runs the full size.
 */
export function runs(n: number): number {
  return process.env['TIDEMARK_FAST'] === '1' ? Math.max(10, Math.ceil(n / 20)) : n;
}
