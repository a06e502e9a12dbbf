// The failure suite's checker: what one client saw of one tool call, across reconnects and
// replicas, and whether it was exact, explicitly reset or errored — or silently wrong.
// (Runs under Node's type stripping too: the chaos runner imports it.)

/** One thing a client saw during a call, in the order it saw it. */
export type Seen =
  /** `total` as sent: after a reset, the numbering continues (value and total past a base). */
  | { readonly kind: 'progress'; readonly value: number; readonly total?: number }
  | { readonly kind: 'reset'; readonly reason: string }
  | { readonly kind: 'result'; readonly numbers: readonly number[] }
  /**
   * `answered`: the server answered the call with it (a JSON-RPC error, or a result with
   * `isError`) — not the client's connection failing.
   */
  | { readonly kind: 'error'; readonly message: string; readonly answered?: true }
  /** The client gave up waiting: the server accepted the call and never answered it. */
  | { readonly kind: 'no-answer'; readonly afterMs: number };

export type Outcome =
  /** No reset, progress exactly 1..n, result exactly 1..n. */
  | 'exact'
  /** The client was told of a reset; what followed each reset was consistent and the result exact. */
  | 'reset'
  /** The call failed and the client was told so. */
  | 'errored'
  /** A splice, gap, duplicate or wrong result without a reset. Must never happen. */
  | 'silently-wrong'
  /** Neither a result nor an error. Must never happen either. */
  | 'lost'
  /**
   * Exact otherwise, but the client was reset when nothing that could cause one happened (no
   * retry, no takeover, no eviction): a regression that resets where an exact resume was due.
   */
  | 'needless-reset';

export interface Verdict {
  readonly outcome: Outcome;
  /** For silently-wrong and lost: what was wrong. */
  readonly why?: string;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** Resets after which the log no longer holds what came before: the numbering may start over. */
const LOG_LOST = new Set(['evicted', 'terminal-evicted', 'log-replaced']);

/**
 * Classifies one call of a tool that counts 1..n (progress i for each i, result [1..n]).
 *
 * Between two resets (and before the first, and after the last) the progress a client sees must
 * be one contiguous run: before any reset it starts at 1; after a reset it may start later (the
 * events before were evicted and the reset said so) but never skips or repeats. Without any reset
 * the run is exactly 1..n. The result, when there is one, is exactly 1..n. A re-run execution's
 * progress continues the numbering past a base (value and total both `base +`): its position in
 * the run is `value - (total - n)`. On the wire the values only ever increase, across resets too
 * (unless a reset said the log lost what came before, or events were deleted while the call ran).
 */
export function classify(
  n: number,
  seen: readonly Seen[],
  {
    logLost = false,
    resetExcused = () => true,
  }: {
    /** Events of this call were deleted (deleteRecords, retention) while it ran: numbering may restart. */
    logLost?: boolean;
    /** Whether something that happened during the call could cause a reset of this reason. */
    resetExcused?: (reason: string) => boolean;
  } = {},
): Verdict {
  const error = seen.find((s) => s.kind === 'error');
  const result = seen.find((s) => s.kind === 'result');
  const noAnswer = seen.find((s) => s.kind === 'no-answer');
  if (noAnswer !== undefined)
    return { outcome: 'lost', why: `no answer after ${Math.round(noAnswer.afterMs / 1000)} s` };
  if (result === undefined && error === undefined)
    return { outcome: 'lost', why: 'no result and no error' };
  if (result !== undefined) {
    const expected = range(n).join(',');
    if (result.numbers.join(',') !== expected)
      return { outcome: 'silently-wrong', why: `result ${result.numbers.join(',')} ≠ ${expected}` };
  }
  let segment: number[] = [];
  let resets = 0;
  let lastValue = 0;
  const checkSegment = (): string | undefined => {
    if (segment.length === 0) return undefined;
    if (resets === 0 && segment[0] !== 1) return `progress starts at ${segment[0]} without a reset`;
    for (let i = 1; i < segment.length; i++)
      if (segment[i] !== segment[i - 1]! + 1)
        return `progress ${segment[i - 1]} → ${segment[i]} without a reset`;
    if (segment.at(-1)! > n) return `progress ${segment.at(-1)} beyond ${n}`;
    return undefined;
  };
  for (const s of seen) {
    if (s.kind === 'progress') {
      if (s.value <= lastValue && !logLost)
        return { outcome: 'silently-wrong', why: `progress went back: ${lastValue} → ${s.value}` };
      lastValue = s.value;
      segment.push(s.total === undefined ? s.value : s.value - (s.total - n));
    }
    if (s.kind === 'reset') {
      if (LOG_LOST.has(s.reason)) lastValue = 0;
      const problem = checkSegment();
      if (problem !== undefined) return { outcome: 'silently-wrong', why: problem };
      resets++;
      segment = [];
    }
    if (s.kind === 'result') break;
  }
  const problem = checkSegment();
  if (problem !== undefined) return { outcome: 'silently-wrong', why: problem };
  if (result !== undefined && segment.length > 0 && segment.at(-1) !== n)
    return { outcome: 'silently-wrong', why: `result after progress ${segment.at(-1)} of ${n}` };
  if (result !== undefined && resets === 0 && segment.length !== n)
    return {
      outcome: 'silently-wrong',
      why: `${segment.length} of ${n} progress events, no reset`,
    };
  if (result === undefined) return { outcome: 'errored' };
  const needless = seen.find((s) => s.kind === 'reset' && !resetExcused(s.reason));
  if (needless?.kind === 'reset')
    return {
      outcome: 'needless-reset',
      why: `reset (${needless.reason}) with nothing during the call that could cause it`,
    };
  return { outcome: resets === 0 ? 'exact' : 'reset' };
}

/** Counts of outcomes over many calls, for the chaos runner's summary. */
export function tally(verdicts: readonly Verdict[]): Record<Outcome, number> {
  const counts: Record<Outcome, number> = {
    exact: 0,
    reset: 0,
    errored: 0,
    'silently-wrong': 0,
    lost: 0,
    'needless-reset': 0,
  };
  for (const v of verdicts) counts[v.outcome]++;
  return counts;
}

/** What a Tasks-extension client saw of one task: each status reported, then the outcome. */
export interface TaskSeen {
  /** Every status the client was told, then every status the checker read back afterwards. */
  readonly statuses: readonly string[];
  /** The numbers of a completed task's result, as the client got them. */
  readonly numbers?: readonly number[];
  /**
   * The task as the checker read it back itself after the client's wait ended (raw `tasks/get`,
   * independent of the client under test): its result's numbers when completed, or `unknown`.
   */
  readonly readBack?: { readonly numbers?: readonly number[]; readonly unknown?: boolean };
  /** How the wait ended otherwise: the task failed or was cancelled (explicit), or it was lost. */
  readonly ending?: 'failed' | 'cancelled' | 'lost';
  readonly why?: string;
  /** The task's id, once created (for the failure report). */
  readonly taskId?: string;
}

const TERMINAL_TASK = new Set(['completed', 'failed', 'cancelled']);
const TASK_STATUSES = new Set([...TERMINAL_TASK, 'working', 'input_required']);

/**
 * Classifies one task of a tool that counts 1..n: its result exact, or an explicit failure; a
 * status never changes once terminal (read back after the client stopped following); the result
 * read back is the one the client got; and a task the server created is never lost (unknown
 * later, or never finished).
 */
export function classifyTask(n: number, seen: TaskSeen): Verdict {
  if (seen.readBack?.unknown === true && seen.statuses.some((s) => s !== 'unknown'))
    return { outcome: 'lost', why: `the task became unknown: ${seen.statuses.join(' → ')}` };
  const odd = seen.statuses.find((s) => !TASK_STATUSES.has(s));
  if (odd !== undefined) return { outcome: 'silently-wrong', why: `status ${odd}` };
  const terminal = seen.statuses.findIndex((s) => TERMINAL_TASK.has(s));
  if (terminal >= 0 && seen.statuses.slice(terminal).some((s) => s !== seen.statuses[terminal]))
    return {
      outcome: 'silently-wrong',
      why: `status left ${seen.statuses[terminal]}: ${seen.statuses.join(' → ')}`,
    };
  if (seen.ending === 'lost') return { outcome: 'lost', why: seen.why ?? 'the task was lost' };
  if (seen.ending !== undefined) return { outcome: 'errored' };
  const expected = range(n).join(',');
  if (seen.numbers?.join(',') !== expected)
    return { outcome: 'silently-wrong', why: `result ${seen.numbers?.join(',')} ≠ ${expected}` };
  if (seen.readBack !== undefined && seen.readBack.numbers?.join(',') !== expected)
    return {
      outcome: 'silently-wrong',
      why: `the client got ${expected}, tasks/get now holds ${seen.readBack.numbers?.join(',')}`,
    };
  return { outcome: seen.statuses.length > 0 ? 'exact' : 'lost' };
}
