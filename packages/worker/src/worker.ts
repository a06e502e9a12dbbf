import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { recordAssignedPartitions, recordWorkerRefusal } from '@tidemark/otel';
import { SealedRecords } from './calls/index.js';
import { answerUnreadable } from './calls/index.js';
import {
  decodeRequestRecord,
  JsonRpcErrorCodes,
  newWorkerEpoch,
  SESSION_ENDED,
  type GroupMembership,
  type LogRecord,
  type RequestRecord,
  type WorkerEpoch,
  type PartitionKey,
} from '@tidemark/protocol';
import { Admission, admissionOf } from './calls/index.js';
import { CallSlots, slotNotes, slotShareOf, type SlotOccupancy } from './calls/index.js';
import { probeToolModules, type ModuleListing } from './modules/index.js';
import { PartitionReader } from './calls/index.js';
import type { ToolModule } from '@tidemark/tools';
import {
  compileWorkerOptions,
  type CompiledWorkerOptions,
  type WorkerOptions,
} from './worker-options.js';
import { answerFailure } from './calls/index.js';
import { requestPartitions, startEvents, startLanes, type Started } from './worker-lanes.js';

/**
 * The tool worker: a member of the workers' consumer group on `requests`. For each session of its
 * partitions it holds an `McpServer` with the tool modules, restored from `sessions` on first
 * sight; every message the server sends is written to `events` stamped with its generation. A
 * request's offset is committed only once its stream is terminal.
 *
 * @example
 * const worker = new Worker({ log, topics: topicNames(), modules: await loadToolModules(paths) });
 * await worker.start();
 */
export class Worker {
  readonly epoch: WorkerEpoch = newWorkerEpoch();
  private readonly options: CompiledWorkerOptions;
  private readonly slots: CallSlots;
  private readonly admission: Admission;
  private readonly sealed: SealedRecords;
  private started: Started | undefined;
  /** Resolves with the membership: a partition may be assigned before `joinGroup` returns. */
  private joined: Promise<GroupMembership> | undefined;
  private membership: GroupMembership | undefined;
  private readonly readers = new Map<number, PartitionReader>();
  private readonly timers: NodeJS.Timeout[] = [];
  private sweeping = false;
  private stopped = false;
  private listings: readonly ModuleListing[] = [];

  constructor(options: WorkerOptions) {
    this.options = compileWorkerOptions(options);
    this.slots = new CallSlots(this.options);
    this.admission = new Admission(this.slots, this.options, this.options.onProblem);
    this.sealed = new SealedRecords(this.options);
  }

  /**
   * Checks every tool module (`probeToolModules`: a module whose `register` fails stops the start,
   * named), then joins the group and starts reading the partitions it is given.
   */
  async start(): Promise<void> {
    const { log, topics } = this.options;
    this.listings = await probeToolModules(this.options.modules, this.options);
    const partitionCount = await requestPartitions(this.options);
    const events = await startEvents(this.options, partitionCount);
    this.started = startLanes(this.options, this.epoch, this.slots, partitionCount, events, {
      fenced: (partition) => this.readers.get(partition)?.fenced === true,
    });
    this.joined = log.joinGroup({
      topic: topics.requests,
      group: this.options.group,
      onAssigned: (assigned) => assigned.forEach((p) => this.assign(p)),
      onRevoked: (revoked) => this.revoke(revoked),
      // Start nothing more there, at once: the handoff itself (`revoke`) may wait its turn.
      onLost: (lost) => {
        const untilMs = Date.now() + this.options.handoffTimeoutMs;
        for (const partition of lost) {
          const reader = this.readers.get(partition);
          reader?.handOff(untilMs);
          // No notice in the log: the next owner will not wait, so the calls here take no more
          // steps (a zombie's second effect; see CallEnvironment.fenced).
          if (this.started?.handoffs.noticeWritten(partition) !== true) reader?.fence();
        }
      },
      // Before the group hears the partitions are let go: their next owner finds the notices.
      onReleasing: async (releasing) =>
        this.started?.handoffs.begin(releasing.flatMap((p) => this.readers.get(p) ?? [])),
    });
    this.membership = await this.joined;
    this.every(this.options.commitIntervalMs, () => this.commitAll());
    // A sweep a few times per TTL (and per server idle time), at least once a minute.
    const { sessionTtlMs, resultTtlMs, serverIdleMs } = this.options;
    const shortest = Math.min(sessionTtlMs, resultTtlMs, serverIdleMs);
    this.every(Math.max(100, Math.min(60_000, Math.floor(shortest / 4))), () => this.sweep());
  }

  /** What each tool module registered when last probed (at start, or by `replaceModules`). */
  get modules(): readonly ModuleListing[] {
    return this.listings;
  }

  /**
   * Expires what outlived its TTL in every partition this worker owns, and drops the MCP servers
   * of sessions idle longer than `serverIdleMs` (memory follows what is live, not what was seen).
   */
  async sweep(): Promise<void> {
    const started = this.started;
    if (this.sweeping || this.stopped || started === undefined) return;
    this.sweeping = true;
    try {
      await started.sessionLane.runtimes.dropIdle(Date.now() - this.options.serverIdleMs);
      for (const partition of [...this.readers.keys()]) {
        await started.stores.housekeeping.sweep(partition).catch((error: unknown) => {
          this.options.onProblem(`expiring sessions and results of partition ${partition}`, error);
        });
      }
    } finally {
      this.sweeping = false;
    }
  }

  /**
   * Replaces the tool modules (`tidemark dev --watch`): the new ones are probed first (a module that
   * fails leaves the old ones serving, and the error goes up); then every session's client is told
   * its tools changed, and each session's server is restored with the new modules — at once when
   * idle, after its running calls end otherwise. Sessions themselves live on: they are in the log.
   */
  async replaceModules(modules: readonly ToolModule[]): Promise<void> {
    this.listings = await probeToolModules(modules, this.options);
    this.options.modules = modules;
    this.started?.lane.events?.replaceModules(modules);
    await this.started?.sessionLane.runtimes.modulesReplaced();
  }

  /**
   * Whether the worker is alive: every partition's read loop came back within `stallMs` (or all
   * call slots are taken, and readers rightly wait). The stalled partitions, when not.
   */
  liveness(nowMs = Date.now()): { alive: boolean; stalled: number[] } {
    const stalled = this.slots.full
      ? []
      : [...this.readers.values()]
          .filter((reader) => nowMs - reader.lastBeatMs > this.options.stallMs)
          .map((reader) => reader.partition);
    return { alive: stalled.length === 0, stalled };
  }

  /**
   * How full the call and task slots are, how much of each the busiest subject holds, and how many
   * requests wait for one: for readiness (`/readyz` says when one subject is at its cap) and tests.
   */
  slotReport(): { calls: SlotOccupancy; tasks: SlotOccupancy; queued: number } {
    return {
      calls: this.slots.occupancy('call'),
      tasks: this.slots.occupancy('task'),
      queued: this.admission.queued,
    };
  }

  /**
   * What readiness says beside `ready`: a subject holding half or more of a kind of slot (it is
   * at its share; not named), and requests waiting for a slot. Worth knowing, not a reason to take
   * the worker out of service: the other subjects are served meanwhile.
   */
  slotNotes(): string[] {
    const { calls, tasks, queued } = this.slotReport();
    return slotNotes(calls, tasks, queued);
  }

  /** The Events extension here: the streams whose source runs, the subscriptions delivered. */
  get eventWork(): { sources: string[]; deliveries: number } {
    const sources = this.started?.sources;
    return {
      sources: sources?.runningStreams ?? [],
      deliveries: sources?.deliveries.deliveringCount ?? 0,
    };
  }

  /** Partitions this worker reads now. */
  get assignedPartitions(): number[] {
    return [...this.readers.keys()].sort((a, b) => a - b);
  }

  /**
   * Drains: no request starts from now on; what is finished is committed; the group is left, so
   * other workers serve the partitions at once; the calls running go on up to the handoff timeout
   * (the next owners wait for them rather than run them again); those still running then stop, and
   * their next owners run them again as new generations.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    await this.started?.handoffs.begin([...this.readers.values()]);
    await this.commitAll();
    await this.membership?.leave();
    await this.revoke([...this.readers.keys()]);
  }

  private every(ms: number, task: () => Promise<void>): void {
    const timer = setInterval(() => void task(), ms);
    timer.unref();
    this.timers.push(timer);
  }

  private assign(partition: number): void {
    const started = this.started;
    if (this.readers.has(partition) || this.stopped || started === undefined) return;
    const reader: PartitionReader = new PartitionReader({
      log: this.options.log,
      topic: this.options.topics.requests,
      partition,
      pollMs: this.options.pollMs,
      membership: this.joined ?? Promise.resolve(undefined),
      heads: started.stores.heads,
      onRecord: (record) => this.dispatch(started, reader, record),
      onProblem: this.options.onProblem,
    });
    this.readers.set(partition, reader);
    started.handoffs.assigned(partition);
    recordAssignedPartitions(1);
    started.stores.housekeeping.assign(partition);
    started.sources?.assign(partition);
  }

  /** The partitions went to other workers (or this one stops): hands their calls over, then lets go. */
  private async revoke(partitions: readonly number[]): Promise<void> {
    const readers = partitions.flatMap((p) => this.readers.get(p) ?? []);
    if (readers.length === 0) return;
    await this.started?.handoffs.finish(readers);
    // What outlived the handoff stops now: the partition's next owner runs it.
    this.started?.stateless.dropPartitions(partitions);
    await Promise.all(readers.map((reader) => reader.stop()));
    await Promise.all(partitions.map(async (p) => this.started?.sources?.revoke(p)));
    await this.started?.sessionLane.dropPartitions(partitions);
    for (const reader of readers) {
      await reader.commit(this.membership);
      this.readers.delete(reader.partition);
      recordAssignedPartitions(-1);
      this.started?.stores.housekeeping.revoke(reader.partition);
      this.started?.handoffs.revoked(reader.partition);
    }
    await this.started?.handoffs.released(partitions);
  }

  /** One record of `requests`, by its lane. */
  private async dispatch(
    started: Started,
    reader: PartitionReader,
    record: LogRecord,
  ): Promise<void> {
    if (!this.sealed.admit(record, `requests ${reader.partition}@${record.offset}`))
      return reader.done(record.offset);
    const decoded = decodeRequestRecord(record);
    if (!decoded.ok) {
      await answerUnreadable(started.lane, this.options, record, decoded.problem);
      return reader.done(record.offset);
    }
    const request = decoded.record;
    // Giving the partition up: only what running calls wait for (answers, cancellations) is taken;
    // the rest stays uncommitted, for the next owner.
    if (reader.handingOff && (request.lane === 'control' || admissionOf(request).ordered)) return;
    const session: PartitionKey =
      request.lane === 'stateless' || request.lane === 'keyed-session'
        ? request.key
        : request.session;
    started.stores.housekeeping.touch(reader.partition, session);
    if (request.lane === 'control') {
      if (request.control === SESSION_ENDED) {
        await started.sessionLane.end(request.session);
        await started.stores.housekeeping.ended(reader.partition, session);
      }
      return reader.done(record.offset);
    }
    const at = `requests ${reader.partition}@${record.offset}`;
    const admitted = await this.admission.admit(
      slotShareOf(request.share ?? '', request.message),
      session,
      { ...admissionOf(request), at },
      // A record that waited may find its partition gone: its next owner runs it.
      () =>
        reader.signal.aborted || reader.handingOff
          ? Promise.resolve()
          : this.handle(started, reader, record, request),
    );
    if (admitted !== 'refused') return;
    recordWorkerRefusal('queued-per-subject');
    await answerFailure(started.lane, session, request.message as JSONRPCMessage, {
      code: JsonRpcErrorCodes.badRequest,
      message: `Too many requests of this subject waiting on this worker (limit ${this.options.maxQueuedCallsPerSubject}); retry later`,
    });
    reader.done(record.offset);
  }

  /** A request record, by its lane, once admitted. */
  private async handle(
    started: Started,
    reader: PartitionReader,
    record: LogRecord,
    request: Exclude<RequestRecord, { lane: 'control' }>,
  ): Promise<void> {
    switch (request.lane) {
      case 'stateless':
        return started.stateless.dispatch(reader, record, request);
      case 'session':
        return started.sessionLane.dispatch(
          reader,
          record,
          request.session,
          request.message as JSONRPCMessage,
          { joins: request.joins, caller: request.caller },
        );
      case 'keyed-session':
        return started.stateless.keyedSession(reader, record, request);
    }
  }

  private async commitAll(): Promise<void> {
    for (const reader of [...this.readers.values()]) await reader.commit(this.membership);
  }
}
