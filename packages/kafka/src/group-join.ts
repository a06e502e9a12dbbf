import type { Admin, Broker, ConnectionPool } from '@platformatic/kafka';
import type { GroupMembership, JoinGroupOptions } from '@tidemark/protocol';
import { ConsumerProtocolUnsupported, joinConsumerGroup } from './consumer-group-member.js';
import { toTidemarkError } from './errors.js';
import { joinKafkaGroup, type KafkaGroupOptions } from './kafka-group.js';

/** What joining a group needs of the Kafka log. */
export interface GroupJoinContext {
  readonly protocol: 'consumer' | 'classic';
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

/** Kafka's config resource type of a group, and the incremental SET operation. */
const GROUP_RESOURCE = 32 as const;
const SET_CONFIG = 0 as const;

/**
 * Joins a group on the consumer protocol (KIP-848) — or on the classic one when told to, or when
 * the brokers refuse the consumer protocol (said through `onProblem`).
 */
export async function joinGroupOf(
  context: GroupJoinContext,
  options: JoinGroupOptions,
): Promise<GroupMembership> {
  const { admin, topicMetadata } = context;
  if (context.protocol === 'consumer') {
    try {
      await setGroupTimeouts(context, options.group);
      return await joinConsumerGroup(
        {
          connections: context.connections,
          anyBroker: async () => (await topicMetadata(options.topic)).leaders[0]!,
          topicId: async () => (await topicMetadata(options.topic)).id,
          committed: (partition) => committedOffset(admin, options.group, options.topic, partition),
          rebalanceTimeoutMs: context.sessionTimeoutMs,
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
  return joinKafkaGroup(
    {
      ...context.classic,
      sessionTimeoutMs: context.sessionTimeoutMs,
      heartbeatIntervalMs: heartbeatIntervalOf(context.sessionTimeoutMs),
    },
    options,
  );
}

/** A fifth of the session timeout: a member misses four heartbeats before the group drops it. */
function heartbeatIntervalOf(sessionTimeoutMs: number): number {
  return Math.max(500, Math.floor(sessionTimeoutMs / 5));
}

/**
 * The group's session timeout on the consumer protocol (a group config, not the member's): a
 * value outside the brokers' bounds is refused, said, and the brokers' default stays.
 */
async function setGroupTimeouts(context: GroupJoinContext, group: string): Promise<void> {
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
  } catch (error) {
    context.onProblem(
      `group ${group}: the brokers refused a session timeout of ${sessionMs} ms (group.consumer.min.session.timeout.ms and group.consumer.min.heartbeat.interval.ms bound it); their default stays`,
      error,
    );
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
