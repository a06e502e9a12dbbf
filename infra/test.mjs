#!/usr/bin/env node
// `npm test`: the whole suite in phases, each timed, so a slow run says where its minutes went.
//
//   prerequisites   infra/test-prerequisites.mjs (cached in ~/.cache/tidemark)
//   build           turbo, its cache in ~/.cache/tidemark/turbo: a clean clone reuses the outputs
//                   of the last build of the same sources instead of compiling all 14 packages
//   static checks   the packages' typecheck, the tests' `tsc`, and lint (eslint, prettier, knip),
//                   side by side: each is one process on one core, and the machine has two
//   vitest          every project, with coverage (a filtered `vitest run` has none: its thresholds
//                   are the whole suite's)
//   interop table   test/interop/render.ts --check
//   budget          test/support/budget.ts --check: the vitest files' summed time against
//                   test/budget.json, +10% at most unless re-recorded with a reason
//
// The phases' times go to test-results/phases.json and are printed at the end, beside the vitest
// projects' and the slowest files' (test/support/summary-reporter.ts); test/support/budget.ts
// compares them with the durations recorded in test/budget.json.
//
// Plain JavaScript, like test-prerequisites.mjs, so any Node can start it.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const cache = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tidemark');
const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: '1',
  TURBO_CACHE_DIR: process.env.TURBO_CACHE_DIR || join(cache, 'turbo'),
};

/** Runs one command with the terminal as its output; resolves on exit 0. */
function run(label, command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${label}: exit ${code ?? signal}`)),
    );
  });
}

const npx = (bin) => join(root, 'node_modules', '.bin', bin);
const phases = [
  ['prerequisites', () => run('prerequisites', process.execPath, ['infra/test-prerequisites.mjs'])],
  ['build', () => run('build', npx('turbo'), ['run', 'build', '--output-logs=errors-only'])],
  [
    'static checks',
    () =>
      Promise.all([
        run('typecheck', npx('turbo'), ['run', 'typecheck', '--output-logs=errors-only']).then(() =>
          run('typecheck (tests)', npx('tsc'), ['-p', 'tsconfig.json']),
        ),
        run('lint', 'npm', ['run', 'lint', '--silent']),
      ]),
  ],
  ['vitest', () => run('vitest', npx('vitest'), ['run', '--coverage.enabled'])],
  [
    'interop table',
    () => run('interop table', process.execPath, ['test/interop/render.ts', '--check']),
  ],
  ['budget', () => run('budget', process.execPath, ['test/support/budget.ts', '--check'])],
];

const times = {};
let failed;
for (const [name, phase] of phases) {
  const started = performance.now();
  try {
    await phase();
  } catch (error) {
    failed = `${name}: ${error.message}`;
  }
  times[name] = Math.round((performance.now() - started) / 1000);
  if (failed) break;
}

const results = join(root, 'test-results');
mkdirSync(results, { recursive: true });
writeFileSync(join(results, 'phases.json'), `${JSON.stringify(times, null, 2)}\n`);
process.stdout.write(
  `\nnpm test phases (s): ${Object.entries(times)
    .map(([name, s]) => `${name} ${s}`)
    .join(' · ')}\n`,
);
if (failed) {
  process.stderr.write(`npm test failed in ${failed}\n`);
  process.exit(1);
}
