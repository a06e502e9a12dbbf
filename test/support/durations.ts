import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What one vitest run cost: each project's summed file time and each file's, in seconds. */
export interface Durations {
  recordedAt: string;
  projects: Record<string, number>;
  files: Record<string, { project: string; seconds: number }>;
}

export const rootDir = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
export const RESULTS_DIR = join(rootDir, 'test-results');
const cache = join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'tidemark');
/** The last full run's durations: `npm test` copies them here, outside the clone, after vitest. */
export const LAST_FULL_RUN = join(cache, 'durations-last-full-run.json');

export function lastDurations(): Durations | undefined {
  if (!existsSync(LAST_FULL_RUN)) return undefined;
  try {
    return JSON.parse(readFileSync(LAST_FULL_RUN, 'utf8')) as Durations;
  } catch {
    return undefined; // a torn copy: no comparison this time, the next full run rewrites it
  }
}

/** The recorded budget: test/budget.json. */
export interface Budget {
  /** How far above the recorded total a run may go before it must say why: 0.1 is +10%. */
  tolerance: number;
  recorded: {
    at: string;
    /** Every vitest file's time summed (both workers' time, not the wall). */
    vitestFileSeconds: number;
    projects: Record<string, number>;
    /** `npm test`'s phases on the run that was recorded, for the reader; not checked. */
    phases: Record<string, number>;
  };
  /** Why the budget was re-recorded, newest last: a test that costs time says so here. */
  reasons: Array<{ at: string; vitestFileSeconds: number; reason: string }>;
}

export interface BudgetVerdict {
  ok: boolean;
  total: number;
  limit: number;
  /** The files that grew most against the last full run, when there is one. */
  grew: Array<{ file: string; was: number; now: number }>;
}

/** Checks a full run's durations against the budget: over `recorded × (1 + tolerance)` fails. */
export function checkBudget(now: Durations, budget: Budget, last?: Durations): BudgetVerdict {
  const total = sum(Object.values(now.projects));
  const limit = budget.recorded.vitestFileSeconds * (1 + budget.tolerance);
  const grew = Object.entries(now.files)
    .map(([file, { seconds }]) => ({ file, was: last?.files[file]?.seconds ?? 0, now: seconds }))
    .filter((row) => row.now > row.was)
    .sort((a, b) => b.now - b.was - (a.now - a.was))
    .slice(0, 5);
  return { ok: total <= limit, total: round(total), limit: round(limit), grew };
}

/** The budget re-recorded from a run, with the reason it grew (or shrank). */
export function recordBudget(
  budget: Budget,
  now: Durations,
  phases: Record<string, number>,
  reason: string,
): Budget {
  if (reason.trim().length < 10) throw new Error('say why the budget changes (a sentence)');
  const vitestFileSeconds = round(sum(Object.values(now.projects)));
  return {
    ...budget,
    recorded: { at: now.recordedAt, vitestFileSeconds, projects: now.projects, phases },
    reasons: [...budget.reasons, { at: now.recordedAt, vitestFileSeconds, reason: reason.trim() }],
  };
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const round = (s: number) => Math.round(s * 10) / 10;
