import {
  encodeStamp,
  encodeStreamHead,
  ErrorCodes,
  HEAD_STATE_HEADER,
  nextGeneration,
  partitionForSession,
  streamHeadKey,
  TidemarkError,
  type Generation,
  type GenerationCause,
  type LogPort,
  type PartitionKey,
  type StreamHead,
  type StreamId,
  type TopicNames,
  type WorkerEpoch,
  splitRecord,
  type AppendRecord,
} from '@tidemark/protocol';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  ATTR_MESSAGING_KAFKA_OFFSET,
  spansPerEvent,
  startMessagingSpan,
  traceHeaders,
} from '@tidemark/otel';
import { AppendQueue } from './append-queue.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MAX_RESULT_BYTES,
  fitMessage,
  keptFinal,
  type MessageLimits,
} from './message-size.js';

export interface StreamWriterOptions {
  port: LogPort;
  topics: TopicNames;
  /** This worker process's epoch: every generation it starts carries it. */
  epoch: WorkerEpoch;
  /** Partitions of the topics (equal for all). */
  partitionCount: number;
  /**
   * The largest message one record of `events` carries (JSON bytes; the topics'
   * `max.message.bytes` less room for headers). A larger message is written in parts, which the
   * log ports join on read.
   * @default 4 MiB
   */
  maxMessageBytes?: number;
  /**
   * The largest message written at all. A larger final message is written as an error that names
   * its size and this limit; a larger one before it is not written, and is said in its place.
   * @default 16 MiB
   */
  maxResultBytes?: number;
}

export interface BeginOptions {
  /** The stream's head as last known (from the `streams` table); undefined for a new stream. */
  previous: StreamHead | undefined;
  /** Why this execution starts; default `first` without a previous head, else `takeover`. */
  cause?: GenerationCause;
  /**
   * The progress this generation continues from, worked out once its start record is in the log
   * (at `startOffset`): nothing of an earlier generation can land before it after that. Kept in
   * the head, so a generation that dies before writing any progress still passes it on.
   */
  progressBase?: (startOffset: bigint) => Promise<number>;
  /** The stream's state to keep in its first head (`StreamHead.snapshot`). */
  snapshot?: unknown;
}

/**
 * The worker's side of the log: starts generations and writes their stamped records to `events`,
 * keeping each stream's head in `streams` — at generation start and at the end, the final message
 * included, so a finished result outlives the retention of `events`. Per partition one append is
 * in flight at a time, so records of a stream land in the order they were written.
 */
export class StreamWriter {
  private readonly events: AppendQueue;
  private readonly streams: AppendQueue;

  constructor(private readonly options: StreamWriterOptions) {
    this.limits = {
      messageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      resultBytes: options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
    };
    this.events = new AppendQueue(options.port, options.topics.events);
    this.streams = new AppendQueue(options.port, options.topics.streams);
  }

  /** Starts a new generation of a stream: writes its start record, then its head. */
  async begin(
    session: PartitionKey,
    stream: StreamId,
    begin: BeginOptions,
  ): Promise<GenerationWriter> {
    const generation = nextGeneration(this.options.epoch, begin.previous?.generation);
    const cause: GenerationCause =
      begin.cause ?? (begin.previous === undefined ? 'first' : 'takeover');
    const partition = partitionForSession(session, this.options.partitionCount);
    const offset = await this.events.append({
      partition,
      key: session,
      value: null,
      headers: encodeStamp({ stream, generation, seq: 0, kind: 'generation-start', cause }),
    });
    let head: StreamHead = {
      stream,
      generation,
      cause,
      startOffset: offset,
      lastSeq: 0,
      lastOffset: offset,
      contiguousFromSeq: 1,
      contiguousFromOffset: offset,
      terminal: undefined,
      position: offset + 1n,
    };
    const progressBase = (await begin.progressBase?.(offset)) ?? 0;
    if (progressBase > 0) head = { ...head, progressBase };
    // Where the whole stream starts, and how far its earlier generations counted: a reader of all
    // its generations (a task's event stream) numbers every record from these.
    const { previous } = begin;
    head = {
      ...head,
      firstOffset: previous === undefined ? offset : (previous.firstOffset ?? previous.startOffset),
      seqBase: previous === undefined ? 0 : (previous.seqBase ?? 0) + previous.lastSeq,
    };
    if (begin.snapshot !== undefined) head = { ...head, snapshot: begin.snapshot };
    // Events first, then the head: a head never names a generation whose start is not in the log.
    await this.writeHead(session, partition, head);
    return new GenerationWriter(this, session, partition, head);
  }

  /** The limits a message is written within. */
  readonly limits: MessageLimits;

  /** @internal */
  appendEvent(
    partition: number,
    session: PartitionKey,
    headers: Array<[string, string]>,
    value: Buffer | null,
    terminal: boolean,
  ): Promise<bigint> {
    const parent = context.active();
    if (trace.getSpanContext(parent) === undefined)
      return this.append({ partition, key: session, value, headers });
    // By default only the terminal record gets a span; every event carries the trace's context.
    if (!terminal && !spansPerEvent())
      return this.append({
        partition,
        key: session,
        value,
        headers: [...headers, ...traceHeaders(parent)],
      });
    // A produce span under the active one (the tool's, the worker's); its context travels with
    // the event to the gateway, which continues the trace from there.
    const topic = this.options.topics.events;
    const span = startMessagingSpan(
      { system: this.options.port.kind, operation: 'send', topic, partition },
      parent,
    );
    const appended = this.append({
      partition,
      key: session,
      value,
      headers: [...headers, ...traceHeaders(trace.setSpan(parent, span))],
    });
    void appended.then(
      (offset) => span.setAttribute(ATTR_MESSAGING_KAFKA_OFFSET, Number(offset)).end(),
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
        span.end();
      },
    );
    return appended;
  }

  /** Appends one record to `events`, in parts when it is larger than one record takes. */
  private append(record: AppendRecord): Promise<bigint> {
    return this.events.append(splitRecord(record, this.limits.messageBytes) ?? record);
  }

  /** @internal */
  async writeHead(session: PartitionKey, partition: number, head: StreamHead): Promise<void> {
    await this.streams.append({
      partition,
      key: streamHeadKey(session, head.stream),
      value: Buffer.from(encodeStreamHead(head)),
      // The call's trace, so a resume on any gateway continues it; whether it holds a result.
      headers: [
        [HEAD_STATE_HEADER, head.terminal === undefined ? 'open' : 'terminal'],
        ...traceHeaders(),
      ],
    });
  }

  /** Removes a stream's head (its session ended or the head outlived its horizon). */
  async forget(session: PartitionKey, stream: StreamId): Promise<void> {
    const partition = partitionForSession(session, this.options.partitionCount);
    await this.streams.append({ partition, key: streamHeadKey(session, stream), value: null });
  }
}

/**
 * One execution of one stream. `send` writes messages (seq 1, 2, …), `finish` the terminal record
 * with the final message. After a failed write the generation is poisoned: its later writes are
 * refused, so the log never holds a silent hole; the worker retries as a new generation.
 */
export class GenerationWriter {
  private seq = 0;
  private failed: unknown;
  private done = false;
  private last: bigint;
  private pending = 0;

  constructor(
    private readonly writer: StreamWriter,
    readonly session: PartitionKey,
    readonly partition: number,
    private head: StreamHead,
  ) {
    this.last = head.startOffset;
  }

  get generation(): Generation {
    return this.head.generation;
  }

  /** The head as this writer last wrote it: `previous` for the next generation of the stream. */
  get currentHead(): StreamHead {
    return this.head;
  }

  get stream(): StreamId {
    return this.head.stream;
  }

  /**
   * Writes one message; resolves with its offset once durable. The record is queued at once, in
   * order, so a caller may go on before it resolves (pipelining); a failed write poisons the
   * generation, and nothing queued behind it is written.
   */
  send(message: unknown): Promise<bigint> {
    return this.write('message', fitMessage(message, false, this.writer.limits));
  }

  /**
   * Writes one message that changes the stream's state, then the head as of it with the new
   * `snapshot` (a task's status): readers of the head see the change without reading `events`.
   * Resolves once both are durable.
   */
  async record(message: unknown, snapshot: unknown): Promise<bigint> {
    const seq = this.seq + 1;
    const offset = await this.write('message', fitMessage(message, false, this.writer.limits));
    // Finished meanwhile: the terminal head is the last word.
    if (this.done) return offset;
    // Records land in seq order: everything up to this one is in the log below `offset`.
    if (offset + 1n > this.head.position)
      this.head = { ...this.head, lastSeq: seq, lastOffset: offset, position: offset + 1n };
    this.head = { ...this.head, snapshot };
    await this.writer.writeHead(this.session, this.partition, this.head);
    return offset;
  }

  /** Records queued and not yet durable. */
  get unacknowledged(): number {
    return this.pending;
  }

  /**
   * Writes the terminal record (with the final message, if any) and the finished head. When only
   * the head failed to write, calling `finish` again writes the head again (the terminal record is
   * in the log); when the terminal record failed, the generation is poisoned: start another.
   * A final message written in parts does not fit the head: `partedSnapshot` (the state before
   * it, which readers complete from the log) is kept in place of `snapshot` then.
   */
  async finish(message?: unknown, snapshot?: unknown, partedSnapshot?: unknown): Promise<bigint> {
    if (this.head.terminal === undefined) {
      // What the log carries: the final message, or the error said in its place (too large).
      const fitted = fitMessage(message, true, this.writer.limits);
      const offset = await this.write('terminal', fitted);
      const terminal = keptFinal(this.seq, offset, fitted, this.writer.limits);
      this.head = {
        ...this.head,
        lastSeq: this.seq,
        lastOffset: offset,
        terminal,
        position: offset + 1n,
      };
    }
    const kept = this.head.terminal!.inLog === true ? (partedSnapshot ?? snapshot) : snapshot;
    if (kept !== undefined) this.head = { ...this.head, snapshot: kept };
    await this.writer.writeHead(this.session, this.partition, this.head);
    return this.head.terminal!.offset;
  }

  /** Whether a write of this generation failed: nothing more can be written in it. */
  get poisoned(): boolean {
    return this.failed !== undefined;
  }

  private async write(
    kind: 'message' | 'terminal',
    { value }: { value: Buffer | null },
  ): Promise<bigint> {
    if (this.failed !== undefined) {
      throw new TidemarkError(
        ErrorCodes.logUnavailable,
        `generation ${this.head.generation.attempt} of ${this.head.stream} failed to write earlier`,
        { cause: this.failed },
      );
    }
    if (this.done)
      throw new TidemarkError(
        ErrorCodes.invalidArgument,
        `stream ${this.head.stream} already finished`,
      );
    if (kind === 'terminal') this.done = true;
    const seq = ++this.seq;
    this.pending++;
    try {
      this.last = await this.writer.appendEvent(
        this.partition,
        this.session,
        encodeStamp({ stream: this.head.stream, generation: this.head.generation, seq, kind }),
        value,
        kind === 'terminal',
      );
      return this.last;
    } catch (error) {
      this.failed = error;
      throw error;
    } finally {
      this.pending--;
    }
  }
}
