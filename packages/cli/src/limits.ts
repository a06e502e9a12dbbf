import type { GatewayOptions } from '@tidemark/gateway';
import { str, UsageError } from './options.js';

/** The gateway's limits as flags (`gateway` and `dev`); each unset one keeps its default. */
export const LIMIT_FLAGS = {
  'max-body-bytes': { type: 'string' },
  'max-streams-per-session': { type: 'string' },
  'max-requests-per-second': { type: 'string' },
  'max-connections': { type: 'string' },
} as const;

const OPTION_OF = {
  'max-body-bytes': 'maxBodyBytes',
  'max-streams-per-session': 'maxStreamsPerSession',
  'max-requests-per-second': 'maxRequestsPerSecond',
  'max-connections': 'maxConnections',
} as const;

type Limits = Pick<GatewayOptions, (typeof OPTION_OF)[keyof typeof OPTION_OF]>;

export function limitsOf(values: Record<string, string | boolean | string[] | undefined>): Limits {
  const limits: Limits = {};
  for (const [flag, option] of Object.entries(OPTION_OF) as Array<
    [keyof typeof OPTION_OF, (typeof OPTION_OF)[keyof typeof OPTION_OF]]
  >) {
    const value = str(values[flag]);
    if (value === undefined) continue;
    if (!/^[1-9]\d{0,9}$/.test(value) || !Number.isSafeInteger(Number(value)))
      throw new UsageError(`--${flag}: expected a positive integer, got "${value}"`);
    limits[option] = Number(value);
  }
  return limits;
}
