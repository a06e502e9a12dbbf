import { str, UsageError, type FlagValues } from '../options.js';

/** How long idle sessions and finished results live (`dev`, `gateway`, `worker`). */
export const TTL_FLAGS = {
  'session-ttl': { type: 'string' },
  'result-ttl': { type: 'string' },
  'server-idle': { type: 'string' },
  'task-ttl': { type: 'string' },
  'task-poll-interval': { type: 'string' },
} as const;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration in the flags' own words (the largest unit it is a whole number of): `1h`, `90s`. */
export function formatDuration(ms: number): string {
  const units = Object.entries(UNIT_MS).reverse();
  const [unit, size] = units.find(([, size]) => ms % size === 0 && ms >= size) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

/** `90s`, `30m`, `1h`, `7d`, `250ms`: a positive duration in milliseconds. */
export function duration(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const match = /^([1-9]\d{0,9})(ms|s|m|h|d)$/.exec(value.trim());
  const ms = match === null ? NaN : Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(ms) || ms > 365 * UNIT_MS.d)
    throw new UsageError(
      `${flag}: expected a duration such as 90s, 30m, 1h or 7d (at most 365d), got "${value}"`,
    );
  return ms;
}

/** A duration, or `0` where zero means something (`--handoff-timeout`, `--sleep-in-memory`). */
export function durationOrZero(value: string | undefined, flag: string): number | undefined {
  return value?.trim() === '0' ? 0 : duration(value, flag);
}

export interface Ttls {
  sessionTtlMs?: number;
  resultTtlMs?: number;
  serverIdleMs?: number;
  taskTtlMs?: number;
  taskPollIntervalMs?: number;
}

export function ttlsOf(values: FlagValues): Ttls {
  const session = duration(str(values['session-ttl']), '--session-ttl');
  const result = duration(str(values['result-ttl']), '--result-ttl');
  const idle = duration(str(values['server-idle']), '--server-idle');
  const task = duration(str(values['task-ttl']), '--task-ttl');
  const poll = duration(str(values['task-poll-interval']), '--task-poll-interval');
  return {
    ...(task === undefined ? {} : { taskTtlMs: task }),
    ...(poll === undefined ? {} : { taskPollIntervalMs: poll }),
    ...(session === undefined ? {} : { sessionTtlMs: session }),
    ...(result === undefined ? {} : { resultTtlMs: result }),
    ...(idle === undefined ? {} : { serverIdleMs: idle }),
  };
}
