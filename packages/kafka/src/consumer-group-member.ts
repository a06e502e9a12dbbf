import { randomUUID } from 'node:crypto';
import {
  apiVersionsV3,
  consumerGroupHeartbeatV1,
  findCoordinatorV6,
  offsetCommitV9,
  type Broker,
  type Connection,
  type ConnectionPool,
} from '@platformatic/kafka';
import {
  backoffMs,
  ErrorCodes,
  messageOf,
  TidemarkError,
  type GroupMembership,
  type JoinGroupOptions,
} from '@tidemark/protocol';
import { toTidemarkError } from './errors.js';
import { codeOf, coordinatorMoved, KafkaErrors } from './group-error-codes.js';
import { MembershipLease } from './membership-lease.js';

// A member of a consumer group on the next-generation protocol (KIP-848): the broker computes the
// assignments, and a scale event moves only the partitions it must — the others are never paused.
//
// Written on the client's protocol calls rather than its `Consumer`, whose consumer-protocol member
// only runs beside its own message stream (the worker reads its partitions itself, with raw
// fetches), and acknowledges a revocation before the application heard of it. Here a revoked
// partition is released once `onReleasing` resolved (the worker wrote its handoff notices, so the
// next owner, which gets the partition only after the release, always finds them), and
// `onRevoked` — the handoff itself — runs after the release, beside the heartbeats.

const GROUP_KEY_TYPE = 0;
/** The API key of ConsumerGroupHeartbeat. */
const CONSUMER_GROUP_HEARTBEAT = 68;
/** Member epoch -1: the member leaves. */
const LEAVE_EPOCH = -1;
/** How long a release waits for `onReleasing` (the worker's notices) at most. */
const RELEASE_PATIENCE_MS = 3_000;
/** How long joining waits for a coordinator that is not ready (a new cluster, a failover). */
const JOIN_PATIENCE_MS = 30_000;

export interface ConsumerGroupMemberOptions {
  /** Connections to brokers (the coordinator's among them). */
  readonly connections: ConnectionPool;
  /** Any live broker (for finding the group's coordinator). */
  readonly anyBroker: () => Promise<Broker>;
  /** The topic id of `join.topic` (assignments name topics by id). */
  readonly topicId: () => Promise<string>;
  /** The group's committed offset of a partition (read with the admin client). */
  readonly committed: (partition: number) => Promise<bigint | undefined>;
  /** How long a revocation may take before the broker gives up on this member. */
  readonly rebalanceTimeoutMs: number;
  /**
   * The group's session timeout: unanswered for this long, the member stops its partitions itself
   * (the broker may have given them to another member; see `MembershipLease`).
   */
  readonly sessionTimeoutMs: number;
  readonly onProblem: (problem: string, error?: unknown) => void;
}

/** The broker refuses the consumer protocol (an older broker, or one configured for classic only). */
export class ConsumerProtocolUnsupported extends Error {}

/** Joins `join.group` on the consumer protocol; rejects with `ConsumerProtocolUnsupported` when the broker refuses it. */
export async function joinConsumerGroup(
  options: ConsumerGroupMemberOptions,
  join: JoinGroupOptions,
): Promise<GroupMembership> {
  const member = new ConsumerGroupMember(options, join);
  await member.start();
  return member;
}

class ConsumerGroupMember implements GroupMembership {
  readonly protocol = 'consumer';
  private readonly memberId = randomUUID();
  private memberEpoch = 0;
  private coordinator: Promise<Connection> | undefined;
  /** Partitions this member holds (reported to the broker). */
  private readonly owned = new Set<number>();
  /** Partitions the worker was told it has (`onAssigned` less `onRevoked`). */
  private readonly running = new Set<number>();
  private readonly lease: MembershipLease;
  private timer: NodeJS.Timeout | undefined;
  /** The next heartbeat goes at once: it acknowledges a release. */
  private releaseToReport = false;
  private intervalMs = 1_000;
  private failures = 0;
  private sending: Promise<void> = Promise.resolve();
  private changes: Promise<void> = Promise.resolve();
  private left = false;

  constructor(
    private readonly options: ConsumerGroupMemberOptions,
    private readonly join: JoinGroupOptions,
  ) {
    this.lease = new MembershipLease(options.sessionTimeoutMs, (lapsed) => {
      if (lapsed)
        options.onProblem(
          `group ${join.group}: no heartbeat answered for ${options.sessionTimeoutMs} ms (the group may have dropped this member); its partitions stop until one is`,
        );
      this.reconcile();
    });
  }

  /**
   * The first heartbeat: joins (epoch 0), or finds the consumer protocol refused. A coordinator
   * that is not there yet (a new cluster creates its offsets topic; a failover) is waited for.
   */
  async start(): Promise<void> {
    await this.checkSupport();
    const deadline = Date.now() + JOIN_PATIENCE_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.heartbeat();
        break;
      } catch (error) {
        const code = codeOf(error);
        if (code === KafkaErrors.unsupportedVersion)
          throw new ConsumerProtocolUnsupported(messageOf(error));
        if (!coordinatorMoved(code) || Date.now() > deadline)
          throw toTidemarkError(error, `join group ${this.join.group}`);
        this.coordinator = undefined;
        await new Promise((resolve) =>
          setTimeout(resolve, backoffMs(attempt, { initialMs: 100, maxMs: 1_000, jitter: true })),
        );
      }
    }
    this.schedule();
  }

  committed(partition: number): Promise<bigint | undefined> {
    return this.options.committed(partition);
  }

  async commit(partition: number, offset: bigint): Promise<void> {
    // Only a partition this member holds: once it moved, its new owner decides its progress.
    if (!this.owned.has(partition) || this.left || this.lease.lapsed) return;
    await this.withCoordinator(`commit ${this.join.topic}/${partition}@${offset}`, (c) =>
      offsetCommitV9.api.async(c, this.join.group, this.memberEpoch, this.memberId, null, [
        {
          name: this.join.topic,
          partitions: [
            { partitionIndex: partition, committedOffset: offset, committedLeaderEpoch: -1 },
          ],
        },
      ]),
    );
  }

  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    clearTimeout(this.timer);
    this.lease.stop();
    // Out of the group first — its partitions go to other members at once — then the handoff of
    // what ran here (the next owners wait for it through the notices, not through the group).
    this.owned.clear();
    await this.sending.catch(() => undefined);
    await this.send(LEAVE_EPOCH).catch((error: unknown) =>
      this.options.onProblem(`leaving group ${this.join.group}`, error),
    );
    this.reconcile();
    await this.changes;
  }

  /** A broker before Kafka 3.7 does not know the heartbeat (it would drop the connection). */
  private async checkSupport(): Promise<void> {
    let versions;
    try {
      const any = await this.options.connections.get(await this.options.anyBroker());
      versions = await apiVersionsV3.api.async(any, 'tidemark', '1');
    } catch (error) {
      throw toTidemarkError(error, `join group ${this.join.group}`);
    }
    const heartbeat = versions.apiKeys.find((api) => api.apiKey === CONSUMER_GROUP_HEARTBEAT);
    if (heartbeat === undefined || heartbeat.maxVersion < 1)
      throw new ConsumerProtocolUnsupported(
        'the brokers do not offer ConsumerGroupHeartbeat v1 (Kafka 4.0 or later)',
      );
  }

  private schedule(): void {
    if (this.left) return;
    clearTimeout(this.timer);
    const delayMs = this.releaseToReport ? 0 : this.intervalMs;
    this.releaseToReport = false;
    this.timer = setTimeout(() => void this.beat(), delayMs);
  }

  private async beat(): Promise<void> {
    try {
      await this.heartbeat();
      this.failures = 0;
    } catch (error) {
      this.failures++;
      await this.recover(error);
    }
    this.schedule();
  }

  /** One heartbeat, in order with the others; applies what the broker assigned. */
  private heartbeat(): Promise<void> {
    const sent = this.sending.then(async () => {
      const sentAtMs = Date.now();
      const response = await this.send(this.memberEpoch);
      this.memberEpoch = response.memberEpoch;
      if (response.heartbeatIntervalMs > 0) this.intervalMs = response.heartbeatIntervalMs;
      if (response.assignment !== null) await this.assign(response.assignment.topicPartitions);
      // After the assignment: a lapsed member takes up only what it still holds.
      this.lease.confirm(sentAtMs);
    });
    this.sending = sent.catch(() => undefined);
    return sent;
  }

  private async send(epoch: number) {
    const connection = await this.connection();
    const leaving = epoch === LEAVE_EPOCH;
    const topicId = await this.options.topicId();
    return consumerGroupHeartbeatV1.api.async(
      connection,
      this.join.group,
      this.memberId,
      epoch,
      null,
      null,
      leaving ? 0 : this.options.rebalanceTimeoutMs,
      leaving ? [] : [this.join.topic],
      null,
      null,
      // Joining (epoch 0) must say no partitions at all, not an empty list of one topic's.
      leaving || this.owned.size === 0
        ? []
        : [{ topicId, partitions: [...this.owned].sort((a, b) => a - b) }],
    );
  }

  /**
   * The broker's assignment for this member. A partition taken away is released by the next
   * heartbeat (sent at once) after `onReleasing`; its handoff (`onRevoked`) goes on after that.
   */
  private async assign(
    assignment: ReadonlyArray<{ topicId: string; partitions: number[] }>,
  ): Promise<void> {
    const topicId = await this.options.topicId();
    const target = new Set(
      assignment.filter((t) => t.topicId === topicId).flatMap((t) => t.partitions),
    );
    const revoked = [...this.owned].filter((p) => !target.has(p));
    const added = [...target].filter((p) => !this.owned.has(p));
    if (revoked.length > 0) {
      // Bounded: the heartbeats wait meanwhile, and a log that refuses writes must not cost this
      // member its place in the group (the next owner then waits out its notice window instead).
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.join.onReleasing?.(revoked),
        new Promise((resolve) => (timer = setTimeout(resolve, RELEASE_PATIENCE_MS))),
      ]);
      clearTimeout(timer);
      for (const partition of revoked) this.owned.delete(partition);
      this.releaseToReport = true;
    }
    for (const partition of added) this.owned.add(partition);
    this.reconcile();
  }

  /**
   * Tells the worker what changed between the partitions it runs and those it should: the ones
   * held, none while the lease is lapsed or once left. Applied in order (never awaited here: the
   * heartbeats go on during a handoff): a partition revoked and given back later is stopped before
   * it restarts.
   */
  private reconcile(): void {
    const should = this.left || this.lease.lapsed ? new Set<number>() : this.owned;
    const revoked = [...this.running].filter((p) => !should.has(p));
    const added = [...should].filter((p) => !this.running.has(p));
    if (revoked.length === 0 && added.length === 0) return;
    for (const partition of revoked) this.running.delete(partition);
    for (const partition of added) this.running.add(partition);
    // At once: a change before this one may still be under way (a handoff waiting on a log that
    // cannot be reached), and meanwhile the revoked partitions must start nothing.
    if (revoked.length > 0) this.join.onLost?.(revoked);
    this.changes = this.changes
      .then(async () => {
        if (revoked.length > 0) await this.join.onRevoked(revoked);
        if (added.length > 0) this.join.onAssigned(added);
      })
      .catch((error: unknown) =>
        this.options.onProblem(`group ${this.join.group}: applying an assignment`, error),
      );
  }

  /** After a failed heartbeat: fenced → rejoin with nothing; a moved coordinator → find it again. */
  private async recover(error: unknown): Promise<void> {
    const code = codeOf(error);
    if (code === KafkaErrors.fencedMemberEpoch || code === KafkaErrors.unknownMemberId) {
      // The group went on without this member: its partitions are someone else's now.
      this.options.onProblem(`group ${this.join.group}: this member was fenced; joining again`);
      this.owned.clear();
      this.memberEpoch = 0;
      this.reconcile();
      return;
    }
    if (coordinatorMoved(code)) this.coordinator = undefined;
    if (this.failures === 1 || this.failures % 10 === 0)
      this.options.onProblem(`group ${this.join.group}: heartbeat failed; retrying`, error);
    await new Promise((resolve) =>
      setTimeout(resolve, backoffMs(this.failures, { initialMs: 200, maxMs: 2_000, jitter: true })),
    );
  }

  private connection(): Promise<Connection> {
    this.coordinator ??= this.findCoordinator();
    const found = this.coordinator;
    found.catch(() => {
      if (this.coordinator === found) this.coordinator = undefined;
    });
    return found;
  }

  private async findCoordinator(): Promise<Connection> {
    const { connections } = this.options;
    const any = await connections.get(await this.options.anyBroker());
    const answer = await findCoordinatorV6.api.async(any, GROUP_KEY_TYPE, [this.join.group]);
    const found = answer.coordinators[0];
    if (found === undefined || found.errorCode !== 0)
      throw new TidemarkError(
        ErrorCodes.logUnavailable,
        `no coordinator for group ${this.join.group} (error ${found?.errorCode ?? 'none'})`,
        { retryable: true },
      );
    return connections.get({ host: found.host, port: found.port });
  }

  private async withCoordinator<T>(what: string, call: (c: Connection) => Promise<T>): Promise<T> {
    try {
      return await call(await this.connection());
    } catch (error) {
      if (coordinatorMoved(codeOf(error))) this.coordinator = undefined;
      throw toTidemarkError(error, what);
    }
  }
}
