// The suite's time budget, checked after a full `npm test` and re-recorded with a reason:
//
//   node test/support/budget.ts --check            fails when the vitest files' summed time is
//                                                  more than 10% above test/budget.json's (said,
//                                                  not failed, on a machine's first full run)
//   node test/support/budget.ts --record "<why>"   writes this run's times into test/budget.json
//
// Both read test-results/durations.json (the summary reporter's) and test-results/phases.json
// (infra/test.mjs's). The check passes with room when tests get faster; a change that makes the
// suite slower on purpose records the new times and says why, and review reads the reason.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  type Budget,
  checkBudget,
  type Durations,
  LAST_FULL_RUN,
  lastDurations,
  recordBudget,
  RESULTS_DIR,
  rootDir,
} from './durations.ts';

const BUDGET = join(rootDir, 'test', 'budget.json');
const read = <T>(path: string) => JSON.parse(readFileSync(path, 'utf8')) as T;

const [mode, reason = ''] = process.argv.slice(2);
const now = read<Durations>(join(RESULTS_DIR, 'durations.json'));
// The first record starts one: +10% allowed, no reasons yet.
const budget = existsSync(BUDGET)
  ? read<Budget>(BUDGET)
  : ({ tolerance: 0.1, recorded: undefined, reasons: [] } as unknown as Budget);
if (mode === '--record') {
  const phases = read<Record<string, number>>(join(RESULTS_DIR, 'phases.json'));
  writeFileSync(BUDGET, `${JSON.stringify(recordBudget(budget, now, phases, reason), null, 2)}\n`);
  process.stdout.write(`budget recorded in ${BUDGET}\n`);
} else if (mode === '--check' && !existsSync(BUDGET)) {
  process.stderr.write('no budget recorded: node test/support/budget.ts --record "<why>"\n');
  process.exitCode = 1;
} else if (mode === '--check') {
  const last = lastDurations();
  const verdict = checkBudget(now, budget, last);
  // This run becomes the next one's "last full run", whatever the verdict.
  mkdirSync(dirname(LAST_FULL_RUN), { recursive: true });
  copyFileSync(join(RESULTS_DIR, 'durations.json'), LAST_FULL_RUN);
  const line = `vitest files summed ${verdict.total} s, budget ${verdict.limit} s (test/budget.json +${budget.tolerance * 100}%)`;
  if (verdict.ok) process.stdout.write(`budget: ${line}\n`);
  else if (last === undefined)
    // A first run on this machine: its cache was empty, so what it builds (Kubernetes, in the
    // background) shares the cores with the suites. Said, not failed: the budget is for runs
    // whose prerequisites are built.
    process.stdout.write(`budget: ${line} — over, on a first run (an empty cache): not checked\n`);
  else {
    const grew = verdict.grew.map((g) => `  ${g.file}: ${g.was} → ${g.now} s`).join('\n');
    process.stderr.write(
      `budget exceeded: ${line}.\nGrew most since the last full run:\n${grew}\n` +
        'Make it faster, or record the new times with the reason: ' +
        'node test/support/budget.ts --record "<why>"\n',
    );
    process.exitCode = 1;
  }
} else {
  process.stderr.write('usage: node test/support/budget.ts --check | --record "<why>"\n');
  process.exitCode = 2;
}
