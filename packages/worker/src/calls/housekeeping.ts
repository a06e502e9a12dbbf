import {
  TERMINAL_HEAD,
  type SessionStore,
  type StepJournal,
  type StreamHeadStore,
  type TableEntry,
} from '@tidemark/log';
import {
  headKeyOfStep,
  sessionOfHeadKey,
  streamHeadKey,
  TASK_STREAM,
  type PartitionKey,
} from '@tidemark/protocol';

export interface HousekeepingOptions {
  sessions: SessionStore;
  heads: StreamHeadStore;
  /** The journal of durable steps (its records are in `streams`, beside the heads). */
  steps: StepJournal;
  /** A session with no request and no open stream for this long expires. */
  sessionTtlMs: number;
  /** A finished stream's head (with its final result) is kept this long after it finished. */
  resultTtlMs: number;
  now: () => number;
  /** Whether calls of the session (or of a stateless request's key) run on this worker now. */
  isBusy: (session: PartitionKey) => boolean;
  /**
   * Whether an idle session is kept anyway (a stateless request's key while it runs). A session
   * whose calls run with nobody listening is not: it expires, and its calls are stopped.
   */
  keepsSession: (session: PartitionKey) => boolean;
  /** The session expired: drop what this worker holds of it. */
  onExpired: (session: PartitionKey) => Promise<void>;
}

/**
 * Expiry on the worker that owns a partition — the one process that sees every request of its
 * sessions, in order. It keeps the last activity of each session (a request, a notification, or a
 * gateway's "stream still open" touch) and, on each sweep, tombstones in the compacted topics what
 * outlived its TTL: idle sessions with their heads, and finished results past the result TTL.
 * Kafka's compaction (or the embedded log's) then removes them from disk.
 *
 * A worker that was just given a partition did not see its sessions' earlier activity: every
 * session counts as active at the assignment, so a move never expires a session early (it may live
 * up to one TTL longer).
 */
export class Housekeeping {
  private readonly partitions = new Map<
    number,
    { readonly assignedAtMs: number; readonly activity: Map<string, number> }
  >();

  constructor(private readonly options: HousekeepingOptions) {}

  assign(partition: number): void {
    if (this.partitions.has(partition)) return;
    this.partitions.set(partition, { assignedAtMs: this.options.now(), activity: new Map() });
  }

  /** The partition moved away: forget its activity and what the tables hold of it. */
  revoke(partition: number): void {
    this.partitions.delete(partition);
    this.options.sessions.release(partition);
    this.options.heads.release(partition);
    this.options.steps.release(partition);
  }

  /** A record of the session arrived. */
  touch(partition: number, session: string): void {
    this.partitions.get(partition)?.activity.set(session, this.options.now());
  }

  /** The session ended (DELETE): its heads go now, not at expiry. */
  async ended(partition: number, session: PartitionKey): Promise<void> {
    this.partitions.get(partition)?.activity.delete(session);
    await this.options.heads.catchUp(partition);
    const prefix = `${session}/`;
    const keys = [...this.options.heads.entries(partition)]
      .map(([key]) => key)
      .filter((key) => key.startsWith(prefix));
    await this.options.heads.forget(partition, keys);
  }

  /**
   * Whether an idle record lives on: a task at least its TTL after its creation; an idempotency
   * key's claim as long as its call's outcome is kept (a later request with the key gets it).
   */
  private async outlivesIdle(session: PartitionKey, now: number): Promise<boolean> {
    const record = await this.options.sessions.get(session);
    const claim = record?.idempotency;
    if (record?.task === undefined && claim !== undefined)
      return (await this.options.heads.get(claim.session ?? session, claim.stream)) !== undefined;
    const ttlMs = record?.task?.ttlMs;
    if (record === undefined || ttlMs === undefined) return false;
    return ttlMs === null || now < record.createdAtMs + ttlMs;
  }

  /**
   * A call's journaled steps go with its head: when the head goes now, or — once the head is gone
   * (a stateless request's, forgotten at its commit) — a result TTL after they were written.
   */
  private expiredSteps(
    partition: number,
    steps: readonly StepEntry[],
    forgotten: ReadonlySet<string>,
  ): string[] {
    if (steps.length === 0) return [];
    const heads = new Set([...this.options.heads.entries(partition)].map(([key]) => key));
    return steps
      .filter(
        ({ head, session, age }) =>
          forgotten.has(head) ||
          (!heads.has(head) && age >= this.options.resultTtlMs && !this.options.isBusy(session)),
      )
      .map(({ key }) => key);
  }

  /** Tombstones what expired in one partition; resolves with how many sessions and heads. */
  async sweep(partition: number): Promise<{ sessions: number; heads: number }> {
    const state = this.partitions.get(partition);
    if (state === undefined) return { sessions: 0, heads: 0 };
    const { sessions, heads, sessionTtlMs, resultTtlMs, isBusy, keepsSession } = this.options;
    await Promise.all([sessions.catchUp(partition), heads.catchUp(partition)]);
    const now = this.options.now();
    const idleSince = (session: PartitionKey, writtenAtMs: number) =>
      Math.max(writtenAtMs, state.assignedAtMs, state.activity.get(session) ?? 0);

    const live = new Set<string>();
    const expired: PartitionKey[] = [];
    for (const [session, entry] of sessions.entries(partition)) {
      if (now - idleSince(session, entry.timestampMs) >= sessionTtlMs && !keepsSession(session))
        expired.push(session);
      else live.add(session);
    }
    // A task is kept at least its TTL after its creation, a key's claim as long as its outcome,
    // however idle (only the idle ones are read here, from the table's cache or the log).
    for (const session of [...expired]) {
      if (await this.outlivesIdle(session, now)) {
        expired.splice(expired.indexOf(session), 1);
        live.add(session);
      }
    }
    // Activity is kept only for sessions that exist: the map is bounded by the live ones.
    for (const session of state.activity.keys())
      if (!live.has(session)) state.activity.delete(session);

    const gone = new Set<string>(expired);
    const forget: string[] = [];
    const { steps, others } = splitSteps(heads.entries(partition), gone, now);
    for (const [key, entry] of others) {
      const session = sessionOfHeadKey(key);
      const age = now - entry.timestampMs;
      if (gone.has(session)) forget.push(key);
      // A task's outcome lives as long as its task record.
      else if (live.has(session) && key === streamHeadKey(session, TASK_STREAM)) continue;
      else if ((entry.flags & TERMINAL_HEAD) !== 0) {
        if (age >= resultTtlMs) forget.push(key);
      } else if (!live.has(session) && age >= sessionTtlMs && !isBusy(session)) {
        // An unfinished head without a session: a stateless request or an ended session whose
        // worker died before finishing it. Nothing will resume it.
        forget.push(key);
      }
    }
    forget.push(...this.expiredSteps(partition, steps, new Set(forget)));
    // The session first: from then on a gateway answers 404, and nothing resumes its streams.
    await sessions.endMany(partition, expired);
    await heads.forget(partition, forget);
    for (const session of expired) await this.options.onExpired(session);
    return { sessions: expired.length, heads: forget.length };
  }
}

/** A journaled step's key in `streams`, with its call's head key, its session and its age. */
interface StepEntry {
  readonly key: string;
  readonly head: string;
  readonly session: PartitionKey;
  readonly age: number;
}

/** The step keys of sessions that live on (they go with their call), and every other key. */
function splitSteps(
  entries: Iterable<[string, TableEntry]>,
  gone: ReadonlySet<string>,
  now: number,
): { steps: StepEntry[]; others: Array<[string, TableEntry]> } {
  const steps: StepEntry[] = [];
  const others: Array<[string, TableEntry]> = [];
  for (const [key, entry] of entries) {
    const head = headKeyOfStep(key);
    const session = sessionOfHeadKey(key);
    if (head === undefined || gone.has(session)) others.push([key, entry]);
    else steps.push({ key, head, session, age: now - entry.timestampMs });
  }
  return { steps, others };
}
