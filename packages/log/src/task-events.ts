import {
  foldStreamHead,
  readStampedRecord,
  sameGeneration,
  TASK_STREAM,
  type LogRecord,
  type StreamHead,
} from '@tidemark/protocol';

// A task's event stream (SEP-2694's `tasks/stream`): every record of the task's stream, across
// all its executions, numbered from 0 in log order. A generation's records are numbered from its
// `seqBase` (the records of the generations before it, which its worker summed into the head), so
// a record has the same number on every gateway, and a reader that starts mid-way (the first
// records gone to retention) still numbers what it reads — or knows it cannot.

/** One event of a task's stream. */
export interface TaskStreamEvent {
  readonly seq: number;
  /** `io.tidemark/message` (what the task sent) or `io.tidemark/terminal` (its outcome). */
  readonly type: 'io.tidemark/message' | 'io.tidemark/terminal';
  /** The JSON-RPC message recorded (a progress notification, an input request, the result). */
  readonly data: unknown;
}

/**
 * Numbers the records of one task stream as they are read in log order, from its first record
 * (`head.firstOffset`) or — when that is gone — from wherever the log starts. `current` is the
 * stream's head as last stored: it names the generation whose base is known without its start.
 */
export class TaskEventNumbering {
  private folded: StreamHead | undefined;
  /** The current generation's first number, when known. */
  private base: number | undefined;
  /** The first number given, or what the next would be. */
  private first: number | undefined;

  constructor(
    private readonly current: StreamHead,
    /** Where reading starts: the stream's first record, or the log start past it. */
    private readonly from: bigint,
  ) {}

  /** The events a record of the partition adds (none for another key's or another stream's). */
  read(raw: LogRecord): TaskStreamEvent[] {
    const record = readStampedRecord(raw);
    if (record?.stamp.stream !== TASK_STREAM) return [];
    const previous = this.folded;
    const { head, effect } = foldStreamHead(previous, record);
    this.folded = head;
    if (head === undefined) return [];
    if (effect === 'started')
      this.base =
        record.stamp.kind === 'generation-start' && record.offset === this.firstOffset
          ? 0
          : this.knownBase(head);
    else if (effect === 'superseded')
      this.base =
        this.base === undefined || previous === undefined
          ? this.knownBase(head)
          : this.base + previous.lastSeq;
    if (!['appended', 'gap', 'terminal'].includes(effect) || this.base === undefined) return [];
    const seq = this.base + record.stamp.seq - 1;
    this.first ??= seq;
    const type = effect === 'terminal' ? 'io.tidemark/terminal' : 'io.tidemark/message';
    return [{ seq, type, data: record.payload }];
  }

  /**
   * The lowest number a reader can still be given: 0 when reading began at the stream's first
   * record; else the first one numbered (or the next one, when none was).
   */
  get earliestSeq(): number {
    if (this.from <= this.firstOffset) return 0;
    return this.first ?? (this.current.seqBase ?? 0) + this.current.lastSeq;
  }

  get finished(): boolean {
    return this.folded?.terminal !== undefined;
  }

  private get firstOffset(): bigint {
    return this.current.firstOffset ?? this.current.startOffset;
  }

  /** A generation's base from the stored head, when it is the head's generation. */
  private knownBase(head: StreamHead): number | undefined {
    return sameGeneration(head.generation, this.current.generation)
      ? (this.current.seqBase ?? 0)
      : undefined;
  }
}
