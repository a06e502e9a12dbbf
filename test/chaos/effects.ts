// The chaos runner's count of effects: every call takes one durable step (counting's `effect`,
// half-way through), whose runs the workers append to a file and whose journaling they print. A
// step's function may run again only when its worker died while it ran (before its outcome was
// journaled); journaled twice, it ran again after that — a duplicated effect. A call that
// answered with an effect key the file never saw lost its effect.
// (Runs under Node's type stripping: the chaos runner imports it.)
import { readFileSync } from 'node:fs';

interface EffectRun {
  readonly effectKey: string;
  readonly session: string;
  readonly stream: string;
  readonly attempt: number;
}

export interface EffectCount {
  /** Runs of the step's function, all keys. */
  readonly applied: number;
  /** Runs again of a step whose earlier run never reached the journal (its worker died). */
  readonly inFlight: number;
  /** Runs after the step's outcome was journaled: each a broken promise. */
  readonly duplicated: string[];
  /** Calls answered with an effect key no run recorded. */
  readonly lost: string[];
}

/** A step a worker reported journaled (its `onStep`, not replayed). */
export interface JournaledStepLine {
  readonly session: string;
  readonly stream: string;
  readonly step: string;
  readonly replayed: boolean;
}

export function countEffects(
  file: string,
  answered: ReadonlySet<string>,
  /** Every step line the workers printed, killed ones included. */
  steps: readonly JournaledStepLine[],
): EffectCount {
  const runs = new Map<string, EffectRun[]>();
  let applied = 0;
  for (const line of readLines(file)) {
    const run = JSON.parse(line) as EffectRun;
    runs.set(run.effectKey, [...(runs.get(run.effectKey) ?? []), run]);
    applied++;
  }
  // A step is journaled once: an execution after that replays it. Journaled twice, its function
  // ran again after its outcome was in the log.
  const journaled = new Map<string, number>();
  for (const line of steps) {
    if (line.replayed || line.step !== 'effect') continue;
    const call = `${line.session} ${line.stream}`;
    journaled.set(call, (journaled.get(call) ?? 0) + 1);
  }
  const duplicated = [...journaled]
    .filter(([, times]) => times > 1)
    .map(([call, times]) => `${call}: journaled ${times} times`);
  let inFlight = 0;
  for (const keyRuns of runs.values()) inFlight += keyRuns.length - 1;
  inFlight -= duplicated.length;
  const lost = [...answered].filter((key) => !runs.has(key));
  return { applied, inFlight: Math.max(0, inFlight), duplicated, lost };
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
