// What the chaos runner did and what the broker saw, in time: the oracle that says whether a
// call's reset or error had a cause. It knows only what the runner itself did (which process it
// killed, which records it deleted) and what the broker reports (the worker group's members) —
// nothing the product under test says about itself.
// (Runs under Node's type stripping: the chaos runner imports it.)
import { groupMembers } from '@tidemark/kafka-fixtures';
import type { CallWindow } from '../e2e/calls.ts';
import { tally, type Verdict } from '../e2e/checker.ts';

export type HappeningKind =
  /** A worker killed or drained by the runner. */
  | 'worker'
  | 'gateway'
  /** Client connections cut at the balancer. */
  | 'cut'
  /** The balancer refusing connections (clients away). */
  | 'hold'
  /** Records deleted from `events`: `keys` are the keys of every record deleted. */
  | 'delete'
  /** The broker saw the worker group's members change (a kill, a drain, a missed heartbeat). */
  | 'membership'
  /**
   * A worker cut from the broker while it runs (a network partition): it excuses nothing by itself
   * — a cut that moves partitions is seen by the broker, as a membership change.
   */
  | 'partition';

/** A fault the runner injects: what kind of happening it is, and how to cause it. */
export interface Fault {
  readonly kind: HappeningKind;
  readonly run: () => Promise<void>;
}

interface Happening {
  readonly kind: HappeningKind;
  readonly startMs: number;
  endMs: number;
  readonly keys?: ReadonlySet<string>;
}

/**
 * A partition moves — and a call under way on it is taken over — only when the broker changes
 * the group's members (a worker killed -9 keeps its partitions until its group session ends, so
 * the kill itself is not the moment). The change is seen by polling, a poll late at most; a call
 * that started just after a change may still be under way on the old owner when it revokes.
 */
const MEMBERSHIP_POLL_MS = 250;
const MEMBERSHIP_REACH_BEFORE_MS = 2_000;
/**
 * An error seen this soon after a fault began is the fault's (a refused or cut connection: the
 * client's retries give up within seconds) — measured from when the error was seen, not from the
 * call's start, so a long call is not excused by a fault that hit it and was recovered from.
 */
const ERROR_AFTER_FAULT_MS = 5_000;
/** A fault is recorded as it starts; the error it causes may be seen a moment before that record. */
const ERROR_REACH_MS = 1_500;

export class Timeline {
  private readonly happenings: Happening[] = [];

  /** Runs one fault, recording when it ran (from its start: until it ends, it runs on). */
  async around(kind: HappeningKind, fault: () => Promise<void>): Promise<void> {
    const happening = { kind, startMs: Date.now(), endMs: Number.POSITIVE_INFINITY };
    this.happenings.push(happening);
    try {
      await fault();
    } finally {
      happening.endMs = Date.now();
    }
  }

  record(kind: HappeningKind, startMs: number, endMs = Date.now(), keys?: ReadonlySet<string>) {
    this.happenings.push({ kind, startMs, endMs, ...(keys ? { keys } : {}) });
  }

  /** Whether records of `key` were deleted while the call ran. */
  deleted(key: string, during: CallWindow): boolean {
    return this.happenings.some(
      (h) =>
        h.kind === 'delete' &&
        h.keys?.has(key) === true &&
        h.endMs >= during.startedMs &&
        h.startMs <= during.endedMs,
    );
  }

  /**
   * Whether something during the call could reset it for `reason`: a new generation needs a retry
   * (the flaky tool) or a partition that moved (the broker changed the group's members: a worker
   * killed or drained, or one that missed its heartbeats); an eviction or a gap needs the call's own records deleted. `log-replaced` never has a
   * cause here: the runner never replaces the log.
   */
  resetExcused(
    reason: string,
    key: string,
    during: CallWindow,
    { retried }: { retried: boolean },
  ): boolean {
    if (reason === 'generation-superseded')
      return (
        retried ||
        this.overlaps(['membership'], {
          startedMs: during.startedMs - MEMBERSHIP_REACH_BEFORE_MS,
          endedMs: during.endedMs + 2 * MEMBERSHIP_POLL_MS,
        })
      );
    if (reason === 'evicted' || reason === 'terminal-evicted' || reason === 'seq-gap')
      return this.deleted(key, during);
    return false;
  }

  /**
   * Whether a fault happened near enough to a failed call to be why it failed. Only a fault that
   * breaks a client's connection can: a gateway killed, client sockets cut, the balancer held.
   * Every client reaches the gateways through the one balancer, pointed at one gateway at a time,
   * so such a fault hits the calls under way then. A worker killed or drained, records deleted,
   * the group's members changing end in a takeover or a reset by design — never in an error.
   */
  explainsError(during: CallWindow): boolean {
    return this.overlaps(['gateway', 'cut', 'hold'], {
      startedMs: Math.max(during.startedMs, during.endedMs - ERROR_AFTER_FAULT_MS) - ERROR_REACH_MS,
      endedMs: during.endedMs + ERROR_REACH_MS,
    });
  }

  private overlaps(kinds: readonly HappeningKind[], during: CallWindow): boolean {
    return this.happenings.some(
      (h) => kinds.includes(h.kind) && h.endMs >= during.startedMs && h.startMs <= during.endedMs,
    );
  }

  /**
   * Asks the broker for the worker group's members every 250 ms and records each change; returns
   * the function that stops watching.
   */
  watchGroup(brokers: readonly string[], group: string): () => Promise<void> {
    let stopped = false;
    const watching = (async () => {
      let members: string | undefined;
      let polledMs = Date.now();
      while (!stopped) {
        const current = await groupMembers(brokers, group).then(
          (ids) => ids.join(','),
          () => undefined,
        );
        const now = Date.now();
        if (current !== undefined) {
          if (members !== undefined && current !== members) {
            this.record('membership', polledMs, now);
            // Beside the faults in the evidence: when the broker saw the members change.
            const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
            console.error(`membership: ${at(polledMs)}–${at(now)} ${members} → ${current}`);
          }
          members = current;
        }
        polledMs = now;
        await new Promise((resolve) => setTimeout(resolve, MEMBERSHIP_POLL_MS));
      }
    })();
    return async () => {
      stopped = true;
      await watching;
    };
  }
}

/** One fault the runner injected, from its start to its end (a cut ends when it heals). */
export interface Firing {
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** A call that started this soon after a fault ended may still meet what it left (a takeover). */
const FAULT_REACH_MS = 5_000;

/**
 * The report per fault: for each kind, how often it fired and what became of the calls it could
 * reach — under way while it ran or begun just after — each call counted once per kind.
 */
export function faultReport(
  firings: readonly Firing[],
  verdicts: ReadonlyArray<Verdict & { window: CallWindow }>,
): string[] {
  const names = [...new Set(firings.map((f) => f.name))];
  return names.map((name) => {
    const fired = firings.filter((f) => f.name === name);
    const reached = verdicts.filter(({ window }) =>
      fired.some(
        (f) => window.endedMs >= f.startMs && window.startedMs <= f.endMs + FAULT_REACH_MS,
      ),
    );
    const counts = tally(reached);
    return `${name} ×${fired.length}: ${reached.length} calls under way — exact ${counts.exact}, reset ${counts.reset}, errored ${counts.errored}, silently wrong ${counts['silently-wrong']}, lost ${counts.lost}, needless resets ${counts['needless-reset']}`;
  });
}
