#!/usr/bin/env node
// `npm run test:fast`: the inner loop, a few minutes at most — not the gate (`npm test` is).
//
// The unit and cpu-bound projects (in-process suites on the embedded log: no broker, no child processes, no
// build: workspace packages resolve to their TypeScript sources) for the files a change touches,
// by vitest's import graph, against `origin/main` (or, without it, the uncommitted changes);
// coverage off; property and fuzz sizes divided by 20 (TIDEMARK_FAST, read by vitest.config.ts).
// Then eslint and prettier on the changed files, with their caches.
//
//   npm run test:fast              what changed
//   npm run test:fast -- --all     every unit suite
//   npm run test:fast -- <files>   those files
//
// Suites that reach code through a child process or a broker are not followed by --changed:
// `npm test` runs them.
import { execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

function base() {
  try {
    git('rev-parse', '--verify', '--quiet', 'origin/main');
    return git('merge-base', 'HEAD', 'origin/main');
  } catch {
    return 'HEAD';
  }
}

function run(command, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, ...env },
    });
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

const args = process.argv.slice(2);
const since = base();
const selection = args.includes('--all') ? [] : args.length > 0 ? args : ['--changed', since];
const started = performance.now();
const tests = await run(
  bin('vitest'),
  [
    'run',
    '--project',
    'unit',
    '--project',
    'cpu-bound',
    '--coverage.enabled=false',
    '--passWithNoTests',
    ...selection.filter((a) => a !== '--all'),
  ],
  { TIDEMARK_FAST: '1' },
);
const changed = git('diff', '--name-only', '--diff-filter=d', since)
  .split('\n')
  .concat(git('ls-files', '--others', '--exclude-standard').split('\n'))
  .filter((file) => /\.(m?[jt]s|json|md|ya?ml)$/.test(file) && !file.startsWith('helm/'));
let checks = 0;
if (changed.length > 0) {
  const code = changed.filter((file) => /\.m?[jt]s$/.test(file));
  if (code.length > 0)
    checks ||= await run(bin('eslint'), [
      '--cache',
      '--cache-location',
      'node_modules/.cache/eslint',
      ...code,
    ]);
  checks ||= await run(bin('prettier'), ['--check', '--cache', '--ignore-unknown', ...changed]);
}
process.stdout.write(`test:fast: ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
process.exit(tests || checks);
