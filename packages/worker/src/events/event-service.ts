import { EventRegistry, OccurrenceLog } from '@tidemark/log';
import {
  ErrorCodes,
  TidemarkError,
  type Keyring,
  type LogPort,
  type TopicNames,
} from '@tidemark/protocol';
import type { EventType, ToolModule } from '@tidemark/tools';
import { emitterOf, type EmitterFor } from './event-emit.js';
import { EventStreamReaders } from './event-stream-readers.js';

// What serving the Events extension needs on a worker: the event types its modules offer, the
// occurrences in the log, and the registry where interest in a stream is recorded (so the
// worker that owns the stream's partition runs its source).

export interface EventServiceOptions {
  readonly log: LogPort;
  readonly topics: TopicNames;
  readonly partitionCount: number;
  /** Signs cursors: the gateways' keyring, so a cursor verifies on every worker. */
  readonly keyring: Keyring;
  readonly modules: readonly ToolModule[];
  /** How long one poll or push stream keeps a stream's source running. */
  readonly leaseMs: number;
  /** Push streams send a heartbeat at least this often. */
  readonly heartbeatMs: number;
  /** A push stream is answered (ends, with its cursor) after this long; its client asks again. */
  readonly pushMaxMs: number;
  /** Webhooks: http to loopback, and subscriptions without authentication (development). */
  readonly allowLoopbackWebhooks: boolean;
  readonly maxSubscriptionsPerSubject: number;
  /** Distinct streams one subject may read (polls, pushes) within a lease, on this process. */
  readonly maxStreamsPerSubject: number;
  /** A subscription's lifetime when the client asks for none. */
  readonly subscriptionTtlMs: number;
  /** Tries of one delivery before its occurrence is given up (a `gap`). */
  readonly webhookAttempts: number;
  /** The first wait before a delivery is tried again (doubling, with jitter). */
  readonly webhookBackoffMs: number;
}

/** The event types of a worker's modules and the log they are served from. */
export class EventService {
  private offered: ReadonlyMap<string, EventType>;
  readonly registry: EventRegistry;
  /** Streams whose lease this process renewed, and until when. */
  private readonly renewed = new Map<string, number>();
  /** Who reads which streams by polls and pushes: a subject's number of them is capped. */
  private readonly readers: EventStreamReaders;

  private constructor(
    readonly options: EventServiceOptions,
    readonly occurrences: OccurrenceLog,
  ) {
    this.offered = eventTypesOf(options.modules);
    this.registry = new EventRegistry({
      port: options.log,
      topic: options.topics.subscriptions,
      partitionCount: options.partitionCount,
    });
    this.readers = new EventStreamReaders(options.maxStreamsPerSubject);
  }

  static async create(options: EventServiceOptions): Promise<EventService> {
    const { log, topics, partitionCount, keyring } = options;
    const logIdentity = await log.identity(topics.occurrences);
    const occurrences = new OccurrenceLog({
      log,
      topic: topics.occurrences,
      partitionCount,
      logIdentity,
      keyring,
    });
    return new EventService(options, occurrences);
  }

  /** The event types offered, by name. */
  get types(): ReadonlyMap<string, EventType> {
    return this.offered;
  }

  /** The modules changed (`tidemark dev --watch`): their event types are offered from now on. */
  replaceModules(modules: readonly ToolModule[]): void {
    this.offered = eventTypesOf(modules);
  }

  /**
   * Records that `subject` wants `stream` for another lease. Renewed when half of the last lease
   * this process wrote has passed: a busy poller costs a record per half lease, not per poll.
   * Refused (invalid request) for a subject already reading its most streams.
   */
  async want(
    stream: {
      readonly key: string;
      readonly type: EventType;
      readonly arguments: Readonly<Record<string, unknown>>;
      /** Whose stream it is (a type scoped per subject, read by an authenticated subject). */
      readonly subject?: string | undefined;
    },
    nowMs: number,
    reader: string,
  ): Promise<void> {
    const { key } = stream;
    this.readers.admit(reader, key, nowMs + this.options.leaseMs, nowMs);
    const until = this.renewed.get(key);
    if (until !== undefined && until - nowMs > this.options.leaseMs / 2) return;
    const untilMs = nowMs + this.options.leaseMs;
    await this.registry.renewLease({
      stream: key,
      name: stream.type.name,
      arguments: stream.arguments,
      untilMs,
      ...(stream.subject === undefined ? {} : { subject: stream.subject }),
    });
    this.renewed.set(key, untilMs);
    if (this.renewed.size > 10_000) this.forgetRenewals(nowMs);
  }

  /**
   * What tools emit occurrences with (`currentExecution().emit`), for a call of `subject`: to its
   * own stream of a type scoped per subject.
   */
  readonly emitAs: EmitterFor = emitterOf(
    () => this.types,
    (stream, occurrence) => this.occurrences.append(stream, [occurrence]),
  );

  private forgetRenewals(nowMs: number): void {
    for (const [stream, until] of this.renewed) if (until <= nowMs) this.renewed.delete(stream);
  }
}

/** The event types of all modules by name; two modules offering one name is a startup error. */
function eventTypesOf(modules: readonly ToolModule[]): Map<string, EventType> {
  const types = new Map<string, EventType>();
  for (const module of modules)
    for (const type of module.events ?? []) {
      if (types.has(type.name))
        throw new TidemarkError(
          ErrorCodes.toolModule,
          `event type ${type.name} is offered by two modules; names must be unique`,
        );
      types.set(type.name, type);
    }
  return types;
}
