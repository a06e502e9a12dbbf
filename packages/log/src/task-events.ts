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

  /**
   * Numbers what follows a stored head — the records from `head.position` on — for a reader that
   * has every event the head accounts for (its `after` is the head's last): it starts from the
   * head's state instead of folding the stream again from its first record, so a resume reads
   * only what was written since, not the partition's traffic since the task began.
   */
  static continuing(head: StreamHead): TaskEventNumbering {
    const numbering = new TaskEventNumbering(head, head.position);
    numbering.folded = head;
    numbering.base = baseOf(head);
    return numbering;
  }

  /**
   * The number the next event gets after everything a stored head accounts for; undefined when
   * the head does not say how many records earlier generations wrote (a head written without
   * `seqBase`): then only a read from the first record numbers the stream.
   */
  static nextSeqAfter(head: StreamHead): number | undefined {
    const base = baseOf(head);
    return base === undefined ? undefined : base + head.lastSeq;
  }

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

/** The current generation's first number: its `seqBase`, or 0 when it is the stream's first. */
function baseOf(head: StreamHead): number | undefined {
  if (head.seqBase !== undefined) return head.seqBase;
  return head.startOffset === (head.firstOffset ?? head.startOffset) ? 0 : undefined;
}
