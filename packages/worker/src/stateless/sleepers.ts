import { SHARE_HEADER, type LogRecord, type PartitionKey } from '@tidemark/protocol';
import type { PartitionReader } from '../calls/index.js';

/** A task asleep off memory: all that is kept of it until it wakes. */
interface Sleeper {
  readonly reader: PartitionReader;
  readonly timer: NodeJS.Timeout;
  readonly wake: (cancelled: boolean) => void;
}

/** Longest single timer (setTimeout's bound); a later wake is timed again when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Tasks asleep (`ex.sleep`) off memory. Their tool ended and their call with it; their request
 * stays uncommitted in its partition (`requests`), so whichever worker owns the partition when
 * the wake time comes — this one by the timer kept here, the next owner by reading the request
 * again — runs it again, replaying its journal. What is kept here per task is the request as it
 * was read (without its bytes) and one timer.
 */
export class Sleepers {
  private readonly asleep = new Map<PartitionKey, Sleeper>();

  has(key: PartitionKey): boolean {
    return this.asleep.has(key);
  }

  /**
   * Keeps `key` asleep until `wakeAtMs`; then `wake` runs it again (`cancelled`: the client
   * cancelled it meanwhile, see `wakeNow`) — unless the partition was revoked first.
   */
  add(
    key: PartitionKey,
    reader: PartitionReader,
    wakeAtMs: number,
    wake: (cancelled: boolean) => void,
  ): void {
    this.remove(key);
    const timer = setTimeout(
      () => {
        if (Date.now() < wakeAtMs) return this.add(key, reader, wakeAtMs, wake);
        this.wakeNow(key, false);
      },
      Math.min(MAX_TIMER_MS, Math.max(0, wakeAtMs - Date.now())),
    );
    // What keeps a worker running is its readers; a sleeper's timer never holds a stop back.
    timer.unref();
    this.asleep.set(key, { reader, timer, wake });
  }

  /** The partitions went elsewhere: their sleepers are forgotten here, the next owner wakes them. */
  drop(partitions: ReadonlySet<number>): void {
    for (const [key, sleeper] of this.asleep)
      if (partitions.has(sleeper.reader.partition)) this.remove(key);
  }

  /**
   * Wakes `key` now: its time came, or the client cancelled it (`cancelled`: nothing of its tool
   * runs again). False when it is not asleep here.
   */
  wakeNow(key: PartitionKey, cancelled: boolean): boolean {
    const sleeper = this.asleep.get(key);
    if (sleeper === undefined) return false;
    this.remove(key);
    if (!sleeper.reader.signal.aborted) sleeper.wake(cancelled);
    return true;
  }

  private remove(key: PartitionKey): void {
    const sleeper = this.asleep.get(key);
    if (sleeper === undefined) return;
    clearTimeout(sleeper.timer);
    this.asleep.delete(key);
  }
}

/**
 * The request as a sleeper keeps it: its place and time, and of its headers only what its wake
 * reads again (the trace context, its slot share) — not its bytes, which may be a view of a whole
 * fetch's buffer (its message is kept parsed), nor the headers its parse already read. Ten
 * thousand sleepers each keep this, so the header names are shared rather than copied per record.
 */
export function asleepRecord(record: LogRecord): LogRecord {
  const headers: Array<readonly [string, string]> = [];
  for (const [name, value] of record.headers)
    if (name === SHARE_HEADER || !name.startsWith('tm-')) headers.push([shared(name), value]);
  return { ...record, value: null, headers };
}

const names = new Map<string, string>();

/** One string per header name (bounded: names past the first few hundred are kept as they are). */
function shared(name: string): string {
  const known = names.get(name);
  if (known !== undefined) return known;
  if (names.size < 256) names.set(name, name);
  return name;
}
