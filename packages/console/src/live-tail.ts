import { PartitionTail, type Subscription } from '@tidemark/log';
import {
  formatGeneration,
  progressOf,
  readStampedRecord,
  type LogPort,
  type LogRecord,
} from '@tidemark/protocol';
import { describeMessage } from './describe.js';

/** One record of `events` as the live tail shows it. */
export interface TailItem {
  readonly session: string;
  readonly stream: string;
  readonly generation: string;
  readonly attempt: number;
  readonly seq: number;
  readonly kind: 'generation-start' | 'message' | 'terminal';
  readonly summary: string;
  readonly progress: number | undefined;
  readonly atMs: number;
  readonly partition: number;
  readonly offset: string;
}

export interface LiveTailOptions {
  readonly log: LogPort;
  readonly topic: string;
  readonly partitionCount: number;
  /** Reports a partition whose tail ended (records evicted under it, or the log closed). */
  readonly onError: (error: unknown) => void;
}

/**
 * Every new record of `events`, from the moment the first page listens: one shared reader per
 * partition (`PartitionTail`), started for the first listener and stopped after the last.
 */
export class LiveTail {
  private readonly tails: PartitionTail[];
  private readonly listeners = new Set<(item: TailItem) => void>();
  private subscriptions: Subscription[] | undefined;
  private starting: Promise<void> | undefined;

  constructor(private readonly options: LiveTailOptions) {
    this.tails = Array.from(
      { length: options.partitionCount },
      (_, partition) => new PartitionTail({ port: options.log, topic: options.topic, partition }),
    );
  }

  /** Calls `listener` for each record appended from now on; returns the unsubscribe. */
  async listen(listener: (item: TailItem) => void): Promise<() => void> {
    this.listeners.add(listener);
    this.starting ??= this.start();
    await this.starting;
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  close(): void {
    this.listeners.clear();
    this.stop();
    for (const tail of this.tails) tail.close();
  }

  private async start(): Promise<void> {
    const { log, topic } = this.options;
    const ends = await Promise.all(this.tails.map((tail) => log.offsets(topic, tail.partition)));
    this.subscriptions = this.tails.map((tail, partition) =>
      tail.subscribe(ends[partition]!.highWatermark, {
        onRecords: (records) => this.deliver(partition, records),
        onError: (error) => this.options.onError(error),
      }),
    );
    // Everyone left while the ends were read: nothing to keep reading for.
    if (this.listeners.size === 0) this.stop();
  }

  private stop(): void {
    for (const subscription of this.subscriptions ?? []) subscription.close();
    this.subscriptions = undefined;
    this.starting = undefined;
  }

  private deliver(partition: number, records: readonly LogRecord[]): void {
    for (const record of records) {
      const stamped = readStampedRecord(record);
      if (stamped === undefined || record.key === null) continue;
      const { stamp, payload } = stamped;
      const item: TailItem = {
        session: record.key,
        stream: stamp.stream,
        generation: formatGeneration(stamp.generation),
        attempt: stamp.generation.attempt,
        seq: stamp.seq,
        kind: stamp.kind,
        summary: describeMessage(stamp.kind, payload),
        progress: progressOf(payload),
        atMs: record.timestampMs,
        partition,
        offset: record.offset.toString(),
      };
      for (const listener of this.listeners) listener(item);
    }
  }
}
