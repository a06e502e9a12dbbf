import { recordSlots } from '@tidemark/otel';

/** Calls answer in seconds; tasks may run for hours. Each has its own slots, so neither starves the other. */
export type SlotKind = 'call' | 'task';

export interface CallSlotsLimits {
  /** Calls running at once (every lane; a task while it is being created). */
  readonly maxConcurrentCalls: number;
  /** Tasks running at once (Tasks extension). */
  readonly maxConcurrentTasks: number;
  /** Calls of one share (subject, or address without authentication) running at once. */
  readonly maxCallsPerSubject: number;
  /** Tasks of one share running at once. */
  readonly maxTasksPerSubject: number;
}

/** How full one kind of slot is, and how much of it the busiest share holds. */
export interface SlotOccupancy {
  readonly busy: number;
  readonly limit: number;
  readonly waiting: number;
  /** The share holding the most slots of this kind, and how many. */
  readonly largest: { readonly share: string; readonly busy: number } | undefined;
}

/** A slot held; given back once. */
export interface Slot {
  readonly kind: SlotKind;
  readonly share: string;
  release(): void;
}

/**
 * The calls and tasks a worker runs at once, shared fairly across subjects ("shares"). Taking a
 * slot waits while none is free for the share; when one frees, the waiting share that holds the
 * fewest goes first (ties: the one waiting longest), so a subject over its share waits behind the
 * others and is not served first. No share holds more than its cap, even on an idle worker: the
 * rest is headroom for the next subject to arrive.
 */
export class CallSlots {
  private readonly pools: Record<SlotKind, Pool>;

  constructor(limits: CallSlotsLimits) {
    this.pools = {
      call: new Pool('call', limits.maxConcurrentCalls, limits.maxCallsPerSubject),
      task: new Pool('task', limits.maxConcurrentTasks, limits.maxTasksPerSubject),
    };
  }

  /** Every call slot is taken: readers wait for one (backpressure, not a wedge). */
  get full(): boolean {
    return this.pools.call.full;
  }

  /** Whether a call of `share` would get a slot now, without waiting behind anyone. */
  freeFor(share: string): boolean {
    return this.pools.call.freeFor(share);
  }

  async acquire(share: string, kind: SlotKind = 'call'): Promise<Slot> {
    const pool = this.pools[kind];
    await pool.take(share);
    let held = true;
    return {
      kind,
      share,
      release: () => {
        if (!held) return;
        held = false;
        pool.give(share);
      },
    };
  }

  occupancy(kind: SlotKind): SlotOccupancy {
    return this.pools[kind].occupancy();
  }
}

class Pool {
  private running = 0;
  private readonly held = new Map<string, number>();
  // Insertion order is waiting order: the share that started waiting first is met first on ties.
  private readonly waiting = new Map<string, Array<() => void>>();
  private queued = 0;

  constructor(
    private readonly kind: SlotKind,
    private readonly limit: number,
    private readonly perShare: number,
  ) {}

  get full(): boolean {
    return this.running >= this.limit;
  }

  freeFor(share: string): boolean {
    return (
      !this.waiting.has(share) &&
      this.running < this.limit &&
      this.heldBySubject(share) < this.capOf(share)
    );
  }

  async take(share: string): Promise<void> {
    if (this.freeFor(share)) return this.count(share, 1);
    // Granted by `give`, which counts the slot for us before waking us.
    await new Promise<void>((resolve) => {
      const queue = this.waiting.get(share);
      if (queue === undefined) this.waiting.set(share, [resolve]);
      else queue.push(resolve);
      this.queued++;
    });
  }

  give(share: string): void {
    this.count(share, -1);
    while (this.running < this.limit) {
      const next = this.nextShare();
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      const wake = queue.shift()!;
      if (queue.length === 0) this.waiting.delete(next);
      this.queued--;
      this.count(next, 1);
      wake();
    }
  }

  occupancy(): SlotOccupancy {
    let largest: SlotOccupancy['largest'];
    for (const [share, busy] of this.held)
      if (largest === undefined || busy > largest.busy) largest = { share, busy };
    return { busy: this.running, limit: this.limit, waiting: this.queued, largest };
  }

  /** The waiting share whose subject is under its cap and holds the fewest slots. */
  private nextShare(): string | undefined {
    let best: string | undefined;
    let fewest = Infinity;
    for (const share of this.waiting.keys()) {
      const busy = this.heldBySubject(share);
      if (busy < this.capOf(share) && busy < fewest) {
        best = share;
        fewest = busy;
      }
    }
    return best;
  }

  private heldBy(share: string): number {
    return this.held.get(share) ?? 0;
  }

  /**
   * What the cap is counted by: a subject's shares together — its calls and its other requests
   * (`#light`). Each alone under the cap was not enough: a push that never ends is a request
   * other than a call, and one subject held half the pool in calls and the other half in pushes
   * (security review H2).
   */
  private heldBySubject(share: string): number {
    const subject = subjectOf(share);
    return this.heldBy(subject) + this.heldBy(`${subject}${LIGHT}`);
  }

  /** A subject's cap, and one slot past it for a request other than a call (listing its tools while its calls fill its share). */
  private capOf(share: string): number {
    return share.endsWith(LIGHT) ? this.perShare + LIGHT_RESERVE : this.perShare;
  }

  private count(share: string, delta: 1 | -1): void {
    this.running += delta;
    const busy = this.heldBy(share) + delta;
    if (busy <= 0) this.held.delete(share);
    else this.held.set(share, busy);
    recordSlots(this.kind, this.running, this.occupancy().largest?.busy ?? 0);
  }
}

/**
 * What a request's slot is counted under: its sender's share for a `tools/call` — the work that
 * may take minutes — and a share of its own beside it for everything else (initialize, lists,
 * pings), which waits in its own queue, not behind the subject's calls. Both count toward the
 * subject's one cap; the second may go one slot past it (`LIGHT_RESERVE`).
 */
export function slotShareOf(share: string, message: unknown): string {
  return (message as { method?: unknown }).method === 'tools/call' ? share : `${share}${LIGHT}`;
}

const LIGHT = '#light';
/**
 * Slots a subject's requests other than calls may hold past its cap: one, so a subject whose calls
 * fill its share still lists its tools or opens a session, and no more, so its pushes cannot take
 * the others' half.
 */
const LIGHT_RESERVE = 1;

const subjectOf = (share: string) =>
  share.endsWith(LIGHT) ? share.slice(0, -LIGHT.length) : share;

/** What readiness says of the slots: a subject at half or more of a kind (not named), and waiting requests. */
export function slotNotes(calls: SlotOccupancy, tasks: SlotOccupancy, queued: number): string[] {
  const held = (kind: SlotKind, { busy, limit, largest }: SlotOccupancy) =>
    largest !== undefined && largest.busy * 2 >= limit
      ? [`one subject holds ${largest.busy} of ${limit} ${kind} slots (${busy} busy)`]
      : [];
  const notes = [...held('call', calls), ...held('task', tasks)];
  if (queued > 0) notes.push(`${queued} requests wait for a slot`);
  return notes;
}
