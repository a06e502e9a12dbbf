import type { GatewayOptions } from '@tidemark/gateway';
import type { WorkerOptions } from '@tidemark/worker';
import { list, positiveInt, str, type FlagValues } from '../options.js';
import { duration } from './ttl.js';

/** The gateway's limits as flags (`gateway` and `dev`); each unset one keeps its default. */
export const LIMIT_FLAGS = {
  'max-body-bytes': { type: 'string' },
  'max-streams-per-session': { type: 'string' },
  'max-streams-per-subject': { type: 'string' },
  'max-sessions-per-subject': { type: 'string' },
  'max-requests-per-second': { type: 'string' },
  'max-connections': { type: 'string' },
  'max-failed-auth-per-minute': { type: 'string' },
  'trusted-proxy': { type: 'string', multiple: true },
  'log-timeout': { type: 'string' },
} as const;

const OPTION_OF = {
  'max-body-bytes': 'maxBodyBytes',
  'max-streams-per-session': 'maxStreamsPerSession',
  'max-streams-per-subject': 'maxStreamsPerSubject',
  'max-sessions-per-subject': 'maxSessionsPerSubject',
  'max-requests-per-second': 'maxRequestsPerSecond',
  'max-connections': 'maxConnections',
  'max-failed-auth-per-minute': 'maxFailedAuthPerMinute',
} as const;

type Limits = Pick<
  GatewayOptions,
  (typeof OPTION_OF)[keyof typeof OPTION_OF] | 'trustedProxies' | 'logTimeoutMs'
>;

export function limitsOf(values: FlagValues): Limits {
  const limits: Limits = positiveIntegers(values, OPTION_OF);
  const proxies = list(values['trusted-proxy']);
  if (proxies.length > 0) limits.trustedProxies = proxies;
  const logTimeoutMs = duration(str(values['log-timeout']), '--log-timeout');
  if (logTimeoutMs !== undefined) limits.logTimeoutMs = logTimeoutMs;
  return limits;
}

/** The worker's slots and lines as flags (`worker`); each unset one keeps its default. */
export const WORKER_LIMIT_FLAGS = {
  'max-concurrent-calls': { type: 'string' },
  'max-concurrent-tasks': { type: 'string' },
  'max-calls-per-subject': { type: 'string' },
  'max-tasks-per-subject': { type: 'string' },
  'max-queued-calls-per-subject': { type: 'string' },
  'max-result-bytes': { type: 'string' },
} as const;

const WORKER_OPTION_OF = {
  'max-concurrent-calls': 'maxConcurrentCalls',
  'max-concurrent-tasks': 'maxConcurrentTasks',
  'max-calls-per-subject': 'maxCallsPerSubject',
  'max-tasks-per-subject': 'maxTasksPerSubject',
  'max-queued-calls-per-subject': 'maxQueuedCallsPerSubject',
  'max-result-bytes': 'maxResultBytes',
} as const;

export function workerLimitsOf(
  values: FlagValues,
): Pick<WorkerOptions, (typeof WORKER_OPTION_OF)[keyof typeof WORKER_OPTION_OF]> {
  return positiveIntegers(values, WORKER_OPTION_OF);
}

/** Each flag of `optionOf` that is set, as a positive integer under its option's name. */
function positiveIntegers<Option extends string>(
  values: FlagValues,
  optionOf: Readonly<Record<string, Option>>,
): Partial<Record<Option, number>> {
  const numbers: Partial<Record<Option, number>> = {};
  for (const [flag, option] of Object.entries(optionOf)) {
    const value = str(values[flag]);
    if (value !== undefined) numbers[option] = positiveInt(value, `--${flag}`, 0);
  }
  return numbers;
}
