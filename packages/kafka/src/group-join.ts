import type { Admin, Broker, ConnectionPool } from '@platformatic/kafka';
import type { GroupMembership, JoinGroupOptions } from '@tidemark/protocol';
import { ConsumerProtocolUnsupported, joinConsumerGroup } from './consumer-group-member.js';
import { toTidemarkError } from './errors.js';
import { joinKafkaGroup, type KafkaGroupOptions } from './kafka-group.js';

/** What joining a group needs of the Kafka log. */
export interface GroupJoinContext {
  readonly protocol: 'consumer' | 'classic' | 'auto';
  readonly sessionTimeoutMs: number;
  readonly admin: Admin;
  /** Connections to group coordinators (the consumer protocol's members). */
  readonly connections: ConnectionPool;
  readonly classic: Pick<KafkaGroupOptions, 'brokers' | 'clientId' | 'connection'>;
  readonly topicMetadata: (
    topic: string,
  ) => Promise<{ readonly id: string; readonly leaders: readonly Broker[] }>;
  readonly onProblem: (problem: string, error?: unknown) => void;
}

/** Kafka's config resource types of a group and a broker, and the incremental SET operation. */
const GROUP_RESOURCE = 32 as const;
const BROKER_RESOURCE = 4 as const;
const SET_CONFIG = 0 as const;
const MIN_SESSION = 'group.consumer.min.session.timeout.ms';
const MAX_SESSION = 'group.consumer.max.session.timeout.ms';
const DEFAULT_SESSION = 'group.consumer.session.timeout.ms';

/**
 * Joins a group on the consumer protocol (KIP-848) — or on the classic one when told to, when the
 * brokers refuse the consumer protocol, or (`auto`) when they refuse its session timeout: most
 * brokers keep `group.consumer.min.session.timeout.ms` at 45 s, and a dead member's partitions
 * would wait that long, while the classic protocol's bound is 6 s. Each choice is said through
 * `onProblem`; every member on the same brokers makes the same one.
 */
export async function joinGroupOf(
  context: GroupJoinContext,
  options: JoinGroupOptions,
): Promise<GroupMembership> {
  const { admin, topicMetadata } = context;
  if (context.protocol !== 'classic') {
    try {
      const refused = await setGroupTimeouts(context, options.group);
      if (refused !== undefined && context.protocol === 'auto') {
        const classic = await joinClassic(context, options).catch((error: unknown) => {
          context.onProblem(
            `group ${options.group}: the classic protocol refused a session timeout of ${context.sessionTimeoutMs} ms too (group.min.session.timeout.ms and group.max.session.timeout.ms bound it); joining with the consumer protocol at the brokers' default session timeout`,
            error,
          );
          return undefined;
        });
        if (classic !== undefined) return classic;
      }
      return await joinConsumerGroup(
        {
          connections: context.connections,
          anyBroker: async () => (await topicMetadata(options.topic)).leaders[0]!,
          topicId: async () => (await topicMetadata(options.topic)).id,
          committed: (partition) => committedOffset(admin, options.group, options.topic, partition),
          rebalanceTimeoutMs: context.sessionTimeoutMs,
          sessionTimeoutMs: context.sessionTimeoutMs,
          onProblem: context.onProblem,
        },
        options,
      );
    } catch (error) {
      if (!(error instanceof ConsumerProtocolUnsupported)) throw error;
      context.onProblem(
        `group ${options.group}: the brokers refuse the consumer group protocol (KIP-848: Kafka 4.0+, group.coordinator.rebalance.protocols); joining with the classic protocol`,
        error,
      );
    }
  }
  return joinClassic(context, options);
}

function joinClassic(
  context: GroupJoinContext,
  options: JoinGroupOptions,
): Promise<GroupMembership> {
  return joinKafkaGroup(
    {
      ...context.classic,
      sessionTimeoutMs: context.sessionTimeoutMs,
      heartbeatIntervalMs: heartbeatIntervalOf(context.sessionTimeoutMs),
      committed: (partition) =>
        committedOffset(context.admin, options.group, options.topic, partition),
    },
    options,
  );
}

/** A fifth of the session timeout: a member misses four heartbeats before the group drops it. */
function heartbeatIntervalOf(sessionTimeoutMs: number): number {
  return Math.max(500, Math.floor(sessionTimeoutMs / 5));
}

/**
 * The group's session timeout on the consumer protocol (a group config, not the member's). A value
 * outside the brokers' bounds is refused: said, with what a dead member's takeover will really
 * take and the broker setting that changes it, and returned (`auto` then joins classic).
 */
async function setGroupTimeouts(
  context: GroupJoinContext,
  group: string,
): Promise<{ readonly error: unknown } | undefined> {
  const sessionMs = context.sessionTimeoutMs;
  const config = (name: string, value: number) => ({
    name,
    configOperation: SET_CONFIG,
    value: `${value}`,
  });
  try {
    await context.admin.incrementalAlterConfigs({
      resources: [
        {
          resourceType: GROUP_RESOURCE,
          resourceName: group,
          configs: [
            config('consumer.session.timeout.ms', sessionMs),
            config('consumer.heartbeat.interval.ms', heartbeatIntervalOf(sessionMs)),
          ],
        },
      ],
    });
    return undefined;
  } catch (error) {
    const bounds = await brokerSessionBounds(context.admin);
    const said =
      bounds === undefined
        ? `${MIN_SESSION} and ${MAX_SESSION} bound it`
        : `their bounds: ${MIN_SESSION}=${bounds.min}, ${MAX_SESSION}=${bounds.max}`;
    const theirs = bounds === undefined ? 'their default' : `${bounds.default} ms`;
    context.onProblem(
      context.protocol === 'auto'
        ? `group ${group}: the brokers refused a session timeout of ${sessionMs} ms on the consumer protocol (${said}); joining with the classic protocol, so a member that dies without leaving has its partitions taken over after ${sessionMs} ms (set ${MIN_SESSION} on the brokers to ${sessionMs} or less for the consumer protocol)`
        : `group ${group}: the brokers refused a session timeout of ${sessionMs} ms (${said}); their default stays, so a member that dies without leaving has its partitions taken over after ${theirs}, not ${sessionMs} ms (change ${MIN_SESSION} on the brokers, or use the classic protocol)`,
      error,
    );
    return { error };
  }
}

/** The brokers' bounds and default of a consumer-protocol session timeout, when they say them. */
async function brokerSessionBounds(
  admin: Admin,
): Promise<{ min: string; max: string; default: string } | undefined> {
  try {
    const { brokers } = await admin.metadata({ topics: [] });
    const [id] = brokers.keys();
    if (id === undefined) return undefined;
    const keys = [MIN_SESSION, MAX_SESSION, DEFAULT_SESSION];
    const [described] = await admin.describeConfigs({
      resources: [
        { resourceType: BROKER_RESOURCE, resourceName: `${id}`, configurationKeys: keys },
      ],
    });
    const [min, max, fallback] = keys.map(
      (key) => described?.configs.find((c) => c.name === key)?.value ?? undefined,
    );
    if (min === undefined || max === undefined || fallback === undefined) return undefined;
    return { min, max, default: fallback };
  } catch {
    return undefined; // not allowed to describe the brokers: said without the numbers
  }
}

/** A group's committed offset of one partition (none: undefined). */
async function committedOffset(
  admin: Admin,
  group: string,
  topic: string,
  partition: number,
): Promise<bigint | undefined> {
  try {
    const [answer] = await admin.listConsumerGroupOffsets({
      groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: [partition] }] }],
    });
    const offset = answer?.topics
      .find((t) => t.name === topic)
      ?.partitions.find((p) => p.partitionIndex === partition)?.committedOffset;
    return offset === undefined || offset < 0n ? undefined : offset;
  } catch (error) {
    throw toTidemarkError(error, `committed offset of ${topic}/${partition}`);
  }
}
