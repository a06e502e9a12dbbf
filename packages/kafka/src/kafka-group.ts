import { Consumer, type ConnectionOptions } from '@platformatic/kafka';
import type { GroupMembership, JoinGroupOptions } from '@tidemark/protocol';
import { toTidemarkError } from './errors.js';
import { MembershipLease } from './membership-lease.js';

export interface KafkaGroupOptions {
  brokers: readonly string[];
  clientId: string;
  connection?:
    | Pick<
        ConnectionOptions,
        'tls' | 'sasl' | 'tlsServerName' | 'connectTimeout' | 'requestTimeout'
      >
    | undefined;
  /** The broker removes a member it has not heard from for this long. Default 10 s. */
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  /**
   * Reads the group's committed offset of a partition without the member's identity. Asked as the
   * member, a classic member (it sends no epoch) in a group on the consumer protocol — a rolling
   * switch of protocols, 0.1.0 beside 0.2.0 — is refused (ILLEGAL_GENERATION) for as long as the
   * group stays on it. A read needs no fencing: the commits are fenced.
   */
  committed: (partition: number) => Promise<bigint | undefined>;
}

/**
 * Membership in a Kafka consumer group, used only for its assignments and committed offsets: the
 * member reads its partitions itself (raw fetches from the committed offset). Assignments are
 * diffed on every join; a partition another member now owns is revoked.
 */
export async function joinKafkaGroup(
  options: KafkaGroupOptions,
  join: JoinGroupOptions,
): Promise<GroupMembership> {
  const consumer = new Consumer({
    clientId: options.clientId,
    groupId: join.group,
    bootstrapBrokers: [...options.brokers],
    ...options.connection,
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: options.heartbeatIntervalMs,
    rebalanceTimeout: options.sessionTimeoutMs,
  });
  consumer.topics.trackAll(join.topic);
  let owned = new Set<number>();
  let changes = Promise.resolve();
  const sync = (assignments: ReadonlyArray<{ topic: string; partitions: number[] }> | null) => {
    const now = new Set(
      (assignments ?? []).filter((a) => a.topic === join.topic).flatMap((a) => a.partitions),
    );
    const revoked = [...owned].filter((p) => !now.has(p));
    const added = [...now].filter((p) => !owned.has(p));
    owned = now;
    // Changes apply in order: a revocation finishes before a later assignment starts.
    changes = changes.then(async () => {
      if (revoked.length > 0) await join.onRevoked(revoked);
      if (added.length > 0) join.onAssigned(added);
    });
  };
  // Cut off from the group past its session, the member stops its partitions itself (they may be
  // another member's by now), and takes them up again once the group answers.
  const lease = new MembershipLease(options.sessionTimeoutMs, (lapsed) => {
    if (lapsed && owned.size > 0) join.onLost?.([...owned]);
    sync(lapsed ? [] : consumer.assignments);
  });
  let heartbeatSentMs = Date.now();
  consumer.on('consumer:heartbeat:start', () => (heartbeatSentMs = Date.now()));
  consumer.on('consumer:heartbeat:end', () => lease.confirm(heartbeatSentMs));
  consumer.on('consumer:group:join', (payload) => {
    lease.confirm(Date.now());
    if (!lease.lapsed) sync(payload.assignments ?? consumer.assignments);
  });
  consumer.on('consumer:group:leave', () => sync([]));
  try {
    await consumer.joinGroup({
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: options.heartbeatIntervalMs,
      rebalanceTimeout: options.sessionTimeoutMs,
    });
  } catch (error) {
    await consumer.close(true);
    throw toTidemarkError(error, `join group ${join.group}`);
  }
  lease.confirm(Date.now());
  sync(consumer.assignments);
  return {
    protocol: 'classic',
    committed: options.committed,
    commit: async (partition, offset) => {
      // Only a partition this member owns: once the group gave it to another member, the new
      // owner decides its progress. (The old owner learns of the move after the rebalance, and
      // may finish a call meanwhile that the new owner already runs again: committing past it
      // would leave the new owner's execution — if it dies too — with nobody to run it on.)
      if (!owned.has(partition)) return;
      try {
        await consumer.commit({
          offsets: [{ topic: join.topic, partition, offset, leaderEpoch: -1 }],
        });
      } catch (error) {
        throw toTidemarkError(error, `commit ${join.topic}/${partition}@${offset}`);
      }
    },
    leave: async () => {
      lease.stop();
      sync([]);
      await changes;
      await consumer.close(true).catch(() => undefined);
    },
  };
}
