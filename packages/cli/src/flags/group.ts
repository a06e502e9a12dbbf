import type { KafkaLogOptions } from '@tidemark/kafka';
import type { GroupPort } from '@tidemark/protocol';
import { str, UsageError, type FlagValues } from '../options.js';
import { duration, durationOrZero } from './ttl.js';

/** The worker's consumer group and how partitions move between workers (`worker`). */
export const GROUP_FLAGS = {
  group: { type: 'string' },
  'group-session-timeout': { type: 'string' },
  'group-protocol': { type: 'string' },
  'handoff-timeout': { type: 'string' },
} as const;

/** The gateways' group and its timing (`gateway`): they share out the partitions they mint keys onto. */
export const GATEWAY_GROUP_FLAGS = {
  group: GROUP_FLAGS.group,
  'group-session-timeout': GROUP_FLAGS['group-session-timeout'],
  'group-protocol': GROUP_FLAGS['group-protocol'],
} as const;

export const GATEWAY_GROUP = 'tidemark-gateways';

/** `--group` of a gateway: its group on `groups` (the Kafka log), or none (`--group none`). */
export function gatewayGroupOf(
  values: FlagValues,
  groups: GroupPort,
): { group?: { groups: GroupPort; name: string } } {
  const name = str(values['group']) ?? GATEWAY_GROUP;
  return name === 'none' ? {} : { group: { groups, name } };
}

/** How a worker hands its calls over (`dev` too: a stop waits for the calls running). */
export const HANDOFF_FLAGS = { 'handoff-timeout': GROUP_FLAGS['handoff-timeout'] } as const;

/** `--handoff-timeout`: a duration, or 0 (partitions are given up at once). */
export function handoffOf(values: FlagValues): { handoffTimeoutMs?: number } {
  const ms = durationOrZero(str(values['handoff-timeout']), '--handoff-timeout');
  return ms === undefined ? {} : { handoffTimeoutMs: ms };
}

/** How long a task's durable sleep may wait in memory (`worker`). */
export const SLEEP_FLAGS = { 'sleep-in-memory': { type: 'string' } } as const;

/** `--sleep-in-memory`: a duration, or 0 (every durable sleep leaves memory). */
export function sleepOf(values: FlagValues): { sleepInMemoryMs?: number } {
  const ms = durationOrZero(str(values['sleep-in-memory']), '--sleep-in-memory');
  return ms === undefined ? {} : { sleepInMemoryMs: ms };
}

/** The Kafka log's group options: the session timeout and the protocol. */
export function groupLogOptionsOf(
  values: FlagValues,
): Pick<KafkaLogOptions, 'groupSessionTimeoutMs' | 'groupProtocol'> {
  // How long a killed worker's partitions wait before another worker takes them over.
  const sessionMs = duration(str(values['group-session-timeout']), '--group-session-timeout');
  const protocol = str(values['group-protocol']);
  if (
    protocol !== undefined &&
    protocol !== 'auto' &&
    protocol !== 'consumer' &&
    protocol !== 'classic'
  )
    throw new UsageError(`--group-protocol: expected auto, consumer or classic, got "${protocol}"`);
  return {
    ...(sessionMs === undefined ? {} : { groupSessionTimeoutMs: sessionMs }),
    ...(protocol === undefined ? {} : { groupProtocol: protocol }),
  };
}
