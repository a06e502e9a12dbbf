import {
  AuditLog,
  checkPartitionPlacement,
  HandoffNotices,
  RequestWriter,
  SessionStore,
  StepJournal,
  StreamHeadStore,
  StreamWriter,
} from '@tidemark/log';
import { emitAuditLog } from '@tidemark/otel';
import {
  ErrorCodes,
  invalidOption,
  TidemarkError,
  type AuditRecord,
  type PartitionKey,
  type WorkerEpoch,
} from '@tidemark/protocol';
import type { CallSlots } from './calls/index.js';
import { EventSources } from './events/index.js';
import { EventService } from './events/index.js';
import { Handoffs } from './calls/index.js';
import { Housekeeping } from './calls/index.js';
import { callEnvironment, type LaneContext, type WorkerStores } from './calls/index.js';
import { SessionLane } from './session/index.js';
import { StatelessLane } from './stateless/index.js';
import type { CompiledWorkerOptions } from './worker-options.js';

/** What exists once the worker started: the stores, both lanes and the handoffs. */
export interface Started {
  readonly lane: LaneContext;
  readonly stores: WorkerStores;
  readonly sessionLane: SessionLane;
  readonly stateless: StatelessLane;
  readonly sources: EventSources | undefined;
  readonly handoffs: Handoffs;
}

/** The partition count of `requests`, which `events` must share (a session's records align). */
export async function requestPartitions(options: CompiledWorkerOptions): Promise<number> {
  const { log, topics } = options;
  const count = await log.partitionCount(topics.requests);
  const eventsCount = await log.partitionCount(topics.events);
  if (eventsCount !== count)
    throw invalidOption(
      'topics',
      `requests and events with equal partition counts`,
      `${count} and ${eventsCount}`,
    );
  // The audit trail's topic (new in 0.2.0): a deployment made before creates it first, or every
  // call would wait on a write that cannot land.
  const auditCount = await log.partitionCount(topics.audit).catch((error: unknown) => {
    throw new TidemarkError(
      ErrorCodes.topicMismatch,
      `topic ${topics.audit} (the audit trail, new in 0.2.0) cannot be read: create it with \`tidemark topics create\` (idempotent) before starting workers`,
      { cause: error },
    );
  });
  if (auditCount !== count)
    throw invalidOption(
      'topics',
      'requests and audit with equal partition counts',
      `${count} and ${auditCount}`,
    );
  await checkPartitionPlacement(log, topics, count);
  return count;
}

/** What the worker knows of the partitions it reads that the lanes' calls must heed. */
export interface PartitionOwnership {
  /** The partition was lost with no handoff notice: its calls take no more durable steps here. */
  fenced(partition: number): boolean;
}

/** The stores over the log, the lanes over them, and the handoffs between workers. */
export function startLanes(
  options: CompiledWorkerOptions,
  epoch: WorkerEpoch,
  slots: CallSlots,
  partitionCount: number,
  events: WorkerEvents | undefined,
  ownership: PartitionOwnership,
): Started {
  const { log, topics } = options;
  const base = { port: log, topics, partitionCount };
  const heads = new StreamHeadStore(base);
  const sessions = new SessionStore(base);
  const steps = new StepJournal(base);
  const housekeeping = new Housekeeping({
    sessions,
    heads,
    steps,
    sessionTtlMs: options.sessionTtlMs,
    resultTtlMs: options.resultTtlMs,
    now: Date.now,
    isBusy: (session) =>
      started.sessionLane.runtimes.isBusy(session) || started.stateless.isRunning(session),
    // A session's running calls keep its heads, not the session: one nobody listens to (no
    // request, no open stream on any gateway) for its TTL expires, and its calls are stopped.
    keepsSession: (session) => started.stateless.isRunning(session),
    onExpired: (session) => started.sessionLane.runtimes.drop(session),
  });
  const handoffs = new Handoffs({
    notices: new HandoffNotices({ port: log, topics }),
    heads,
    epoch,
    timeoutMs: options.handoffTimeoutMs,
    onProblem: options.onProblem,
  });
  const writer = new StreamWriter({ ...base, epoch, maxResultBytes: options.maxResultBytes });
  const requests = new RequestWriter({
    log,
    topic: topics.requests,
    partitionCount,
    keyring: options.keyring,
  });
  const stores = { writer, heads, sessions, steps, housekeeping, requests };
  const service = events?.service;
  const trail = new AuditLog({ log, topic: topics.audit, partitionCount });
  // Not spread over callEnvironment's: its `modules` is a getter (dev --watch replaces them).
  const environment = callEnvironment(options, stores, service, {
    fenced: (owner: PartitionKey) => ownership.fenced(heads.partitionOf(owner)),
    // The log first: a record the log refused is written again, and emitted once it is in.
    audit: async (record: AuditRecord) => {
      await trail.append(record);
      emitAuditLog(record);
    },
  });
  const lane = { options, stores, slots, events: service, handoffs, environment };
  const started: Started = {
    lane,
    stores,
    sessionLane: new SessionLane(lane),
    stateless: new StatelessLane(lane),
    sources: events?.sources,
    handoffs,
  };
  return started;
}

/** The Events extension of a started worker. */
export interface WorkerEvents {
  readonly service: EventService;
  readonly sources: EventSources;
}

/** The Events extension on a worker whose modules offer event types; undefined when none do. */
export async function startEvents(
  options: CompiledWorkerOptions,
  partitionCount: number,
): Promise<WorkerEvents | undefined> {
  const { log, topics, keyring, modules } = options;
  if (keyring === undefined || !modules.some((module) => (module.events ?? []).length > 0))
    return undefined;
  const service = await EventService.create({
    log,
    topics,
    partitionCount,
    keyring,
    modules,
    leaseMs: options.eventLeaseMs,
    heartbeatMs: options.eventHeartbeatMs,
    pushMaxMs: options.eventPushMaxMs,
    allowLoopbackWebhooks: options.allowLoopbackWebhooks,
    maxSubscriptionsPerSubject: options.maxSubscriptionsPerSubject,
    maxStreamsPerSubject: options.maxEventStreamsPerSubject,
    subscriptionTtlMs: options.subscriptionTtlMs,
    webhookAttempts: options.webhookAttempts,
    webhookBackoffMs: options.webhookBackoffMs,
  });
  const sources = new EventSources({
    service,
    scanMs: options.eventScanMs,
    restartMs: Math.max(1_000, options.eventScanMs),
    onProblem: options.onProblem,
  });
  return { service, sources };
}
