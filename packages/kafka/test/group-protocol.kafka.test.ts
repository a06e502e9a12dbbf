import { KafkaLog, type KafkaLogOptions } from '@tidemark/kafka';
import { createTestTopic, startDedicatedBroker } from '@tidemark/kafka-fixtures';
import type { GroupMembership } from '@tidemark/protocol';
import { describe, expect, inject, it, type TestContext } from 'vitest';

const brokers = inject('kafkaBrokers');

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A group member that records what it is told, in order, with when. */
class Member {
  readonly owned = new Set<number>();
  readonly told: Array<{ what: 'assigned' | 'releasing' | 'revoked'; partitions: number[] }> = [];
  membership: GroupMembership | undefined;

  async join(log: KafkaLog, topic: string, group: string): Promise<void> {
    this.membership = await log.joinGroup({
      topic,
      group,
      onAssigned: (partitions) => {
        this.told.push({ what: 'assigned', partitions: [...partitions] });
        for (const p of partitions) this.owned.add(p);
      },
      onReleasing: (partitions) => {
        this.told.push({ what: 'releasing', partitions: [...partitions] });
        return Promise.resolve();
      },
      onRevoked: (partitions) => {
        this.told.push({ what: 'revoked', partitions: [...partitions] });
        for (const p of partitions) this.owned.delete(p);
      },
    });
  }
}

function logOf(ctx: TestContext, on: readonly string[], options: Partial<KafkaLogOptions> = {}) {
  const problems: string[] = [];
  const log = new KafkaLog({
    brokers: on,
    groupSessionTimeoutMs: 6_000,
    onProblem: (problem) => problems.push(problem),
    ...options,
  });
  ctx.onTestFinished(() => log.close());
  return { log, problems };
}

describe('consumer groups on the real broker', () => {
  it('the consumer protocol (KIP-848): a member that joins takes only the partitions it must, each released before it is given; a leaving member hands the rest over at once', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'kip848', partitions: 4 });
    const group = `${topic}-group`;
    const [first, second] = [new Member(), new Member()];
    const a = logOf(ctx, brokers);
    await first.join(a.log, topic, group);
    expect(first.membership?.protocol).toBe('consumer');
    await until(() => first.owned.size === 4, 15_000, 'the first member to own every partition');

    await first.membership!.commit(1, 42n);
    expect(await first.membership!.committed(1)).toBe(42n);

    const b = logOf(ctx, brokers);
    await second.join(b.log, topic, group);
    await until(
      () => first.owned.size === 2 && second.owned.size === 2,
      15_000,
      'the two members to share the partitions',
    );
    // Only what moved was revoked: the first member kept its other two, never paused.
    const moved = [...second.owned].sort();
    expect(first.told.slice(1)).toEqual([
      { what: 'releasing', partitions: moved },
      { what: 'revoked', partitions: moved },
    ]);
    // The committed offset of a partition that stayed is still there for its owner.
    if (first.owned.has(1)) expect(await first.membership!.committed(1)).toBe(42n);

    const leftAt = Date.now();
    await first.membership!.leave();
    await until(() => second.owned.size === 4, 10_000, 'the second member to own every partition');
    // Well within the session timeout (6 s): a graceful leave, not a timed-out member.
    expect(Date.now() - leftAt).toBeLessThan(4_000);
    expect([a.problems, b.problems]).toEqual([[], []]);
    await second.membership!.leave();
  });

  it('groupProtocol classic: the classic protocol, as before', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'classic', partitions: 2 });
    const member = new Member();
    const { log, problems } = logOf(ctx, brokers, { groupProtocol: 'classic' });
    await member.join(log, topic, `${topic}-group`);
    expect(member.membership?.protocol).toBe('classic');
    await until(() => member.owned.size === 2, 15_000, 'the member to own both partitions');
    expect(problems).toEqual([]);
    await member.membership!.leave();
  });

  it('a classic member in a group on the consumer protocol (a rolling switch of protocols, or 0.1.0 beside 0.2.0) reads the committed offsets of what it is given', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'mixed', partitions: 2 });
    const group = `${topic}-group`;
    const [consumer, classic] = [new Member(), new Member()];
    await consumer.join(logOf(ctx, brokers).log, topic, group);
    expect(consumer.membership?.protocol).toBe('consumer');
    await until(() => consumer.owned.size === 2, 15_000, 'the first member to own both partitions');
    await consumer.membership!.commit(0, 7n);
    await consumer.membership!.commit(1, 9n);
    await classic.join(logOf(ctx, brokers, { groupProtocol: 'classic' }).log, topic, group);
    expect(classic.membership?.protocol).toBe('classic');
    await until(() => classic.owned.size === 1, 15_000, 'the classic member to get a partition');
    const [given] = [...classic.owned];
    // Asked by the member's identity, the broker refused it (ILLEGAL_GENERATION) for as long as
    // the group stayed on the consumer protocol: the partition went unread.
    expect(await classic.membership!.committed(given!)).toBe(given === 0 ? 7n : 9n);
  });

  it('consumer: a session timeout outside the brokers bounds is refused and said, with the takeover time the member really has; it joins all the same', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'bounds', partitions: 1 });
    const member = new Member();
    // Above group.consumer.max.session.timeout.ms (60 s by default).
    const { log, problems } = logOf(ctx, brokers, {
      groupSessionTimeoutMs: 120_000,
      groupProtocol: 'consumer',
    });
    await member.join(log, topic, `${topic}-group`);
    expect(member.membership?.protocol).toBe('consumer');
    await until(() => member.owned.size === 1, 15_000, 'the member to own the partition');
    expect(problems).toEqual([
      expect.stringMatching(
        /refused a session timeout of 120000 ms \(their bounds: group.consumer.min.session.timeout.ms=\d+, group.consumer.max.session.timeout.ms=60000\); their default stays, so a member that dies without leaving has its partitions taken over after 45000 ms, not 120000 ms/,
      ),
    ]);
    await member.membership!.leave();
  });

  it('auto (the default): a session timeout the consumer protocol refuses joins the classic protocol, which allows it, and says why', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'auto', partitions: 1 });
    const member = new Member();
    const { log, problems } = logOf(ctx, brokers, { groupSessionTimeoutMs: 120_000 });
    await member.join(log, topic, `${topic}-group`);
    expect(member.membership?.protocol).toBe('classic');
    await until(() => member.owned.size === 1, 15_000, 'the member to own the partition');
    expect(problems).toEqual([
      expect.stringMatching(
        /refused a session timeout of 120000 ms on the consumer protocol .*joining with the classic protocol, so a member that dies without leaving has its partitions taken over after 120000 ms/,
      ),
    ]);
    await member.membership!.leave();
  });

  it('a broker that refuses the consumer protocol gets the classic one, and says so', async (ctx) => {
    const broker = await startDedicatedBroker({
      config: () => 'group.coordinator.rebalance.protocols=classic\n',
    });
    ctx.onTestFinished(() => broker.destroy());
    const dedicated = [...broker.brokers];
    const topic = await createTestTopic(ctx, { brokers: dedicated, label: 'fallback' });
    const member = new Member();
    const { log, problems } = logOf(ctx, dedicated);
    await member.join(log, topic, `${topic}-group`);
    expect(member.membership?.protocol).toBe('classic');
    expect(problems).toEqual([
      expect.stringMatching(
        /refuse the consumer group protocol .*joining with the classic protocol/,
      ),
    ]);
    await until(() => member.owned.size === 1, 20_000, 'the member to own the partition');
    await member.membership!.leave();
  });
});
