// The chaos runner's count of effects: every call takes one durable step (counting's `effect`,
// half-way through), whose function appends its effect key and its process's pid to a file — a
// record the product does not write. A step's function may run again only when the process that
// ran it before was killed -9 by the runner (the outcome may not have reached the journal); any
// other second run — after a drain, a retry, a replay, with the first process alive — is a
// duplicated effect. A call that answered with an effect key the file never saw lost its effect.
// (Runs under Node's type stripping: the chaos runner imports it.)
import { readFileSync } from 'node:fs';

interface EffectRun {
  readonly effectKey: string;
  readonly pid: number;
  readonly session: string;
  readonly stream: string;
  readonly attempt: number;
  readonly atMs?: number;
}

/** A step's function run again with the process of its earlier run alive. */
export interface DuplicatedEffect {
  readonly effectKey: string;
  readonly session: string;
  /** The two runs, one line each: pid, attempt, when. */
  readonly text: string;
}

export interface EffectCount {
  /** Runs of the step's function, all keys. */
  readonly applied: number;
  /** Runs again of a step whose earlier run's process the runner killed -9. */
  readonly inFlight: number;
  /** Runs again with no kill of the earlier run's process to excuse them: each a broken promise. */
  readonly duplicated: DuplicatedEffect[];
  /** Calls answered with an effect key no run recorded. */
  readonly lost: string[];
}

export function countEffects(
  file: string,
  answered: ReadonlySet<string>,
  /** The pids of the processes the runner killed with SIGKILL. */
  killed: ReadonlySet<number>,
): EffectCount {
  const runs = new Map<string, EffectRun[]>();
  let applied = 0;
  for (const line of readLines(file)) {
    const run = JSON.parse(line) as EffectRun;
    runs.set(run.effectKey, [...(runs.get(run.effectKey) ?? []), run]);
    applied++;
  }
  let inFlight = 0;
  const duplicated: DuplicatedEffect[] = [];
  const when = (run: EffectRun) =>
    run.atMs === undefined ? '' : ` at ${new Date(run.atMs).toISOString().slice(11, 23)}`;
  for (const [key, keyRuns] of runs)
    keyRuns.slice(1).forEach((run, i) => {
      const before = keyRuns[i]!;
      if (killed.has(before.pid)) inFlight++;
      else
        duplicated.push({
          effectKey: key,
          session: run.session,
          text: `${key} (${run.session} ${run.stream}): run by pid ${before.pid}${when(before)} (attempt ${before.attempt}), which was not killed, then again by pid ${run.pid}${when(run)} (attempt ${run.attempt})`,
        });
    });
  const lost = [...answered].filter((key) => !runs.has(key));
  return { applied, inFlight, duplicated, lost };
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  } catch {
    return [];
  }
}
