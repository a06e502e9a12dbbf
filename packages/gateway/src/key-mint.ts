import { randomInt } from 'node:crypto';
import {
  asRoutingKey,
  asSessionId,
  keyInPartitions,
  keyOnPartition,
  newSessionId,
  type GroupMembership,
  type GroupPort,
  type SessionId,
  type PartitionKey,
  type RoutingKey,
} from '@tidemark/protocol';

/**
 * The keys this gateway creates — session ids, and the routing keys of 2026-07-28 requests (a
 * task's id is its call's) — minted onto the partitions of `events` this gateway holds in the
 * gateways' group. The streams it serves are then on its own partitions, and a gateway reads its
 * share of `events` rather than all of it (docs/scaling.md). The group only shares partitions
 * out: a gateway reads nothing through it, and any gateway still serves any key (a resume or a
 * `tasks/get` that reaches another gateway reads that one partition, as before).
 */
export class KeyMint {
  private owned = new Set<number>();
  private ownedList: readonly number[] = [];
  private membership: Promise<GroupMembership | undefined> | undefined;

  constructor(private readonly partitionCount: number) {}

  /** Joins the gateways' group; until its first assignment, and if joining fails, keys land anywhere. */
  join(
    groups: GroupPort,
    group: string,
    topic: string,
    onWarning: (message: string, fields: Record<string, unknown>) => void,
  ): void {
    this.membership = groups
      .joinGroup({
        topic,
        group,
        onAssigned: (partitions) => this.hold([...this.owned, ...partitions]),
        onRevoked: (partitions) =>
          this.hold([...this.owned].filter((p) => !partitions.includes(p))),
      })
      .catch((error: unknown) => {
        onWarning(
          "could not join the gateways' group: keys are minted onto any partition, so this gateway reads more of events than its share",
          { group, error: error instanceof Error ? error.message : String(error) },
        );
        return undefined;
      });
  }

  /** Leaves the group (a drain): the other gateways take this one's partitions for new keys. */
  async leave(): Promise<void> {
    const membership = await this.membership;
    this.membership = undefined;
    this.hold([]);
    await membership?.leave();
  }

  /** Partitions this gateway mints onto (none: any). */
  get partitions(): readonly number[] {
    return this.ownedList;
  }

  /**
   * A key a client sends back (a session id; a `tools/call`'s routing key, which becomes a task's
   * id): on one of this gateway's partitions, and starting with that partition's tag, which an
   * ingress can hash on.
   */
  returned(): PartitionKey {
    const owned = this.ownedList;
    const partition =
      owned.length > 0 ? owned[randomInt(owned.length)]! : randomInt(this.partitionCount);
    return keyOnPartition(partition, this.partitionCount);
  }

  /** A key no client sees (the routing key of a request other than `tools/call`). */
  internal(): PartitionKey {
    const held = this.owned.size;
    return held === 0 || held === this.partitionCount
      ? newSessionId()
      : keyInPartitions(this.owned, this.partitionCount);
  }

  /** A new session's id (a key its client sends back). */
  session(): SessionId {
    return asSessionId(this.returned());
  }

  /**
   * A 2026-07-28 request's routing key: one its client sends back for a `tools/call` (it may
   * become a task's id), one nobody sees otherwise.
   */
  routingKey(returned: boolean): RoutingKey {
    return asRoutingKey(returned ? this.returned() : this.internal());
  }

  private hold(partitions: readonly number[]): void {
    // Partitions added to the topics after this gateway started are not its to mint onto: it
    // routes by the count it started with (docs/scaling.md, "Changing the partition count").
    this.owned = new Set(partitions.filter((p) => p < this.partitionCount));
    this.ownedList = [...this.owned].sort((a, b) => a - b);
  }
}
