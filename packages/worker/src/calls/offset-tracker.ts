/**
 * The committable offset of one partition: records are done in any order (a long call finishes
 * after a short one), but only a contiguous done prefix may be committed — a crash must redeliver
 * every request whose stream is not terminal yet.
 */
export class OffsetTracker {
  private readonly open = new Set<bigint>();
  private next: bigint;

  constructor(start: bigint) {
    this.next = start;
  }

  /** A record read at `offset`; the next record comes from `nextOffset` (gaps are skipped). */
  read(offset: bigint, nextOffset: bigint): void {
    this.open.add(offset);
    if (nextOffset > this.next) this.next = nextOffset;
  }

  /** Moves past offsets that held nothing for this worker (gaps, filtered records). */
  skipTo(nextOffset: bigint): void {
    if (nextOffset > this.next) this.next = nextOffset;
  }

  done(offset: bigint): void {
    this.open.delete(offset);
  }

  /** The offset to commit: the oldest record not done, or past everything read. */
  committable(): bigint {
    let lowest = this.next;
    for (const offset of this.open) if (offset < lowest) lowest = offset;
    return lowest;
  }

  get pending(): number {
    return this.open.size;
  }
}
