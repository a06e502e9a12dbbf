import { str, type FlagValues } from '../options.js';
import { duration } from './ttl.js';

// What a gateway's clients see when it drains. `--sse-retry`: the `retry:` hint 2025-11-25 clients
// get (in the priming event and when a stream is closed for a drain). The official TypeScript and
// Python clients reconnect twice, each after exactly this long, then give up: the hint must outlast
// what a client should ride out. `--drain-timeout`: how long the answers nobody can resume
// elsewhere (2026-07-28 requests in flight: closing one cancels its call) may take to end.

export const DRAIN_FLAGS = {
  'sse-retry': { type: 'string' },
  'drain-timeout': { type: 'string' },
} as const;

/**
 * Default for `tidemark dev`: its restart is the same process coming back (~1–3 s), so two
 * attempts 3 s apart ride it out. A gateway's default stays 1 s: a drained client reconnects to
 * another replica, which is already up.
 */
export const DEV_SSE_RETRY_MS = 3_000;

/** The gateway options for `--sse-retry` (or the given default) and `--drain-timeout`. */
export function drainOf(
  values: FlagValues,
  fallbackRetryMs: number | undefined,
): { retryMs?: number; drainTimeoutMs?: number } {
  const retryMs = duration(str(values['sse-retry']), '--sse-retry') ?? fallbackRetryMs;
  const drainTimeoutMs = duration(str(values['drain-timeout']), '--drain-timeout');
  return {
    ...(retryMs === undefined ? {} : { retryMs }),
    ...(drainTimeoutMs === undefined ? {} : { drainTimeoutMs }),
  };
}
