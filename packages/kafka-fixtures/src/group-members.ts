import {
  Admin,
  ConnectionPool,
  consumerGroupDescribeV0,
  findCoordinatorV6,
} from '@platformatic/kafka';

const GROUP_KEY_TYPE = 0;

/**
 * The member ids of a consumer group, sorted, whichever protocol it runs: the consumer protocol's
 * (KIP-848) from ConsumerGroupDescribe, the classic one's from DescribeGroups — the oracle tests
 * use for "could a partition have moved". Empty when the group has no members (or does not exist).
 */
export async function groupMembers(brokers: readonly string[], group: string): Promise<string[]> {
  const admin = new Admin({ clientId: 'tidemark-test-members', bootstrapBrokers: [...brokers] });
  const connections = new ConnectionPool('tidemark-test-members');
  try {
    const [host, port] = splitBroker(brokers[0]!);
    const any = await connections.get({ host, port });
    const found = (await findCoordinatorV6.api.async(any, GROUP_KEY_TYPE, [group])).coordinators[0];
    if (found !== undefined && found.errorCode === 0) {
      const coordinator = await connections.get({ host: found.host, port: found.port });
      const described = await consumerGroupDescribeV0.api
        .async(coordinator, [group], false)
        .catch(() => undefined);
      const members = described?.groups[0]?.members.map((m) => m.memberId) ?? [];
      if (members.length > 0) return members.sort();
    }
    const classic = (await admin.describeGroups({ groups: [group] })).get(group);
    return [...(classic?.members.keys() ?? [])].sort();
  } finally {
    await connections.close();
    await admin.close();
  }
}

function splitBroker(broker: string): [string, number] {
  const at = broker.lastIndexOf(':');
  return [broker.slice(0, at), Number(broker.slice(at + 1))];
}

/**
 * A group's lag on a topic as Kafka's lag-based autoscalers read it (KEDA's Kafka scaler: each
 * partition's end offset less the group's committed offset, the log start when it committed none),
 * summed over the topic's partitions.
 */
export async function groupLag(
  brokers: readonly string[],
  group: string,
  topic: string,
  partitions: number,
): Promise<bigint> {
  const admin = new Admin({ clientId: 'tidemark-test-lag', bootstrapBrokers: [...brokers] });
  try {
    const indexes = Array.from({ length: partitions }, (_, i) => i);
    const offsetsAt = async (timestamp: bigint) =>
      (
        await admin.listOffsets({
          topics: [
            { name: topic, partitions: indexes.map((p) => ({ partitionIndex: p, timestamp })) },
          ],
        })
      )[0]!.partitions;
    const [ends, starts] = [await offsetsAt(-1n), await offsetsAt(-2n)];
    const [committed] = await admin.listConsumerGroupOffsets({
      groups: [{ groupId: group, topics: [{ name: topic, partitionIndexes: indexes }] }],
    });
    let lag = 0n;
    for (const p of indexes) {
      const end = ends.find((e) => e.partitionIndex === p)!.offset;
      const at = committed?.topics[0]?.partitions.find(
        (c) => c.partitionIndex === p,
      )?.committedOffset;
      const from =
        at === undefined || at < 0n ? starts.find((s) => s.partitionIndex === p)!.offset : at;
      lag += end - from;
    }
    return lag;
  } finally {
    await admin.close();
  }
}
