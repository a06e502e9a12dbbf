import { setTimeout as sleep } from 'node:timers/promises';
import { lastPositionAfter, type StreamLease } from '@tidemark/log';
import { eventStreamKey } from '@tidemark/protocol';
import type { EventType } from '@tidemark/tools';
import { sourceOccurrences } from './event-source-run.js';
import type { EventService } from './event-service.js';
import { WebhookDeliveries } from './webhook-deliveries.js';

// The sources of event streams, run by the worker that owns each stream's partition — the same
// index in every topic, so it moves with the partition, like sessions. A source runs while its
// stream has a live lease (someone polls or streams it), resumes at the position recorded with
// the last occurrence in the log, and is stopped when the lease runs out or the partition moves.

export interface EventSourcesOptions {
  readonly service: EventService;
  /** How often a partition's leases are read again (a new poller waits at most this long). */
  readonly scanMs: number;
  /** A source that failed is started again after this long. */
  readonly restartMs: number;
  readonly onProblem: (message: string, error?: unknown) => void;
}

interface Running {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

interface OwnedPartition {
  readonly timer: NodeJS.Timeout;
  readonly running: Map<string, Running>;
  scanning: boolean;
}

/** Runs the sources of the event streams in the partitions this worker owns. */
export class EventSources {
  private readonly owned = new Map<number, OwnedPartition>();
  /** The webhook deliveries of the same partitions. */
  readonly deliveries: WebhookDeliveries;

  constructor(private readonly options: EventSourcesOptions) {
    this.deliveries = new WebhookDeliveries(options);
  }

  /** Starts watching a partition's leases (the worker was given the partition). */
  assign(partition: number): void {
    if (this.owned.has(partition)) return;
    const timer = setInterval(() => void this.scan(partition), this.options.scanMs);
    timer.unref();
    this.owned.set(partition, { timer, running: new Map(), scanning: false });
    void this.scan(partition);
  }

  /** Stops the partition's sources, before another worker starts them. */
  async revoke(partition: number): Promise<void> {
    const owned = this.owned.get(partition);
    if (owned === undefined) return;
    this.owned.delete(partition);
    clearInterval(owned.timer);
    await Promise.all([...owned.running.values()].map((run) => stopRun(run)));
    await this.deliveries.revoke(partition);
    this.options.service.registry.release(partition);
  }

  /** The streams whose source runs here (for tests and the console). */
  get runningStreams(): string[] {
    return [...this.owned.values()].flatMap((owned) => [...owned.running.keys()]);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.owned.keys()].map((partition) => this.revoke(partition)));
  }

  private async scan(partition: number): Promise<void> {
    const owned = this.owned.get(partition);
    if (owned === undefined || owned.scanning) return;
    owned.scanning = true;
    try {
      const { registry, types } = this.options.service;
      const nowMs = Date.now();
      const { live, expired } = await registry.leases(partition, nowMs);
      const subscriptions = await registry.subscriptions(partition);
      if (this.owned.get(partition) !== owned) return;
      await this.deliveries.sync(partition, subscriptions);
      // Revoked meanwhile: what the sync started stops with the rest.
      if (this.owned.get(partition) !== owned) return await this.deliveries.revoke(partition);
      // A live webhook subscription wants its stream as a lease does.
      for (const { stream, name, arguments: args, expiresAtMs, subject } of subscriptions)
        if (expiresAtMs > nowMs)
          live.push({
            stream,
            name,
            arguments: args,
            untilMs: expiresAtMs,
            // The subscriber's own stream (a type scoped per subject): its source is told whose.
            ...(stream === eventStreamKey(name, args, subject) ? { subject } : {}),
          });
      const wanted = new Set<string>();
      for (const lease of live) {
        const type = types.get(lease.name);
        if (type?.source === undefined) continue; // emitted, or a type another deployment offers
        wanted.add(lease.stream);
        if (!owned.running.has(lease.stream))
          owned.running.set(lease.stream, this.start(partition, lease, type));
      }
      for (const [stream, run] of owned.running)
        if (!wanted.has(stream)) {
          owned.running.delete(stream);
          await stopRun(run);
        }
      if (expired.length > 0) await registry.dropLeases(partition, expired);
    } catch (error) {
      this.options.onProblem(`event streams of partition ${partition}: leases not read`, error);
    } finally {
      owned.scanning = false;
    }
  }

  private start(partition: number, lease: StreamLease, type: EventType): Running {
    const abort = new AbortController();
    const done = this.run(partition, lease, type, abort.signal);
    return { abort, done };
  }

  /** One stream's source, started again after a failure until it is stopped. */
  private async run(
    partition: number,
    { stream, arguments: args, subject }: StreamLease,
    type: EventType,
    signal: AbortSignal,
  ): Promise<void> {
    const { service, restartMs, onProblem } = this.options;
    const { log, topics } = service.options;
    while (!signal.aborted) {
      try {
        // Where the last occurrence recorded left the source: its head, or an occurrence
        // appended after the head was written (a kill between the two writes).
        const head = await service.registry.sourceHead(stream);
        const from = head === undefined ? 0n : head.offset + 1n;
        const later = await lastPositionAfter(log, topics.occurrences, partition, stream, from);
        const position = later?.position ?? head?.position;
        for await (const occurrence of sourceOccurrences(type, {
          stream,
          arguments: args,
          subject,
          position,
          signal,
        })) {
          const [offset] = await service.occurrences.append(stream, [occurrence]);
          await service.registry.putSourceHead(stream, {
            position: occurrence.position,
            offset: offset!,
          });
        }
        return; // the source ended
      } catch (error) {
        if (signal.aborted) return;
        onProblem(
          `event source ${type.name} (${stream}) failed; started again in ${restartMs} ms`,
          error,
        );
        await sleep(restartMs, undefined, { signal }).catch(() => undefined);
      }
    }
  }
}

async function stopRun(run: Running): Promise<void> {
  run.abort.abort();
  await run.done;
}
