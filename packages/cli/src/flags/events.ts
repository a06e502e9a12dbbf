import type { WorkerOptions } from '@tidemark/worker';
import { positiveInt, str, type FlagValues } from '../options.js';
import { duration } from './ttl.js';

/** The Events extension on a worker (`dev`, `worker`): webhook subscriptions and their limits. */
export const EVENT_FLAGS = {
  'allow-loopback-webhooks': { type: 'boolean' },
  'max-subscriptions-per-subject': { type: 'string' },
  'subscription-ttl': { type: 'string' },
} as const;

export function eventOptionsOf(
  values: FlagValues,
): Pick<
  WorkerOptions,
  'allowLoopbackWebhooks' | 'maxSubscriptionsPerSubject' | 'subscriptionTtlMs'
> {
  const cap = str(values['max-subscriptions-per-subject']);
  const ttl = duration(str(values['subscription-ttl']), '--subscription-ttl');
  return {
    ...(values['allow-loopback-webhooks'] === true ? { allowLoopbackWebhooks: true } : {}),
    ...(cap === undefined
      ? {}
      : { maxSubscriptionsPerSubject: positiveInt(cap, '--max-subscriptions-per-subject', 0) }),
    ...(ttl === undefined ? {} : { subscriptionTtlMs: ttl }),
  };
}
