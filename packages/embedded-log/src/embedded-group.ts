import type { GroupMembership, JoinGroupOptions } from '@tidemark/protocol';
import type { PartitionStore } from './partition-store.js';

type Member = { options: JoinGroupOptions; partitions: number[] };

/**
 * Consumer groups in one process: the first member of a group gets every partition; later members
 * of the same group get none until it leaves, then the next one gets them. Commits are durable in
 * the file.
 */
export class EmbeddedGroups {
  private readonly members = new Map<string, Member[]>();

  constructor(
    private readonly store: PartitionStore,
    /** Runs a synchronous operation as a promise (a closed log refuses). */
    private readonly guard: <T>(fn: () => T) => Promise<T>,
  ) {}

  join(options: JoinGroupOptions): GroupMembership {
    const row = this.store.topicRow(options.topic);
    const key = `${options.group}\u0000${options.topic}`;
    const members = this.members.get(key) ?? [];
    this.members.set(key, members);
    const member: Member = { options, partitions: [] };
    members.push(member);
    if (members.length === 1) {
      const assigned = Array.from({ length: row.partitions }, (_, p) => p);
      member.partitions = assigned;
      queueMicrotask(() => options.onAssigned(assigned));
    }
    const { committed, commit } = this.store.statements;
    return {
      committed: (partition) =>
        this.guard(
          () =>
            (
              committed.get(options.group, options.topic, partition) as
                { offset: bigint } | undefined
            )?.offset,
        ),
      commit: (partition, offset) =>
        this.guard(() => {
          commit.run(options.group, options.topic, partition, offset);
        }),
      leave: () => this.leave(members, member),
    };
  }

  private async leave(members: Member[], member: Member): Promise<void> {
    const index = members.indexOf(member);
    if (index < 0) return;
    members.splice(index, 1);
    if (member.partitions.length === 0) return;
    await member.options.onRevoked(member.partitions);
    const next = members[0];
    if (next === undefined) return;
    next.partitions = member.partitions;
    next.options.onAssigned(member.partitions);
  }
}
