import { homedir } from 'node:os';
import { join } from 'node:path';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources, so tests need no build step. Only for
// code Vite transforms: dependencies loaded by Node keep Node's own conditions.
const conditions = ['@tidemark/source', ...defaultServerConditions];
const resolve = { conditions };
const ssr = { resolve: { conditions } };

// Vite's cache — vitest keeps each file's last duration there and starts the longest first — lives
// outside the clone: `npm ci` empties node_modules/.vite, and CI runs a fresh clone each time.
const cacheDir = join(
  process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'),
  'tidemark',
  'vite',
);

/**
 * Properties and fuzzers run 1/20 of their size in `npm run test:fast` (TIDEMARK_FAST=1), handed
 * to them as `inject('runsDivisor')` (`@tidemark/fixtures/runs`).
 */
const provide = { runsDivisor: process.env['TIDEMARK_FAST'] === '1' ? 20 : 1 };

/** The 100,000-message property: minutes of one core. */
const CPU_BOUND_UNIT = ['test/e2e/answered.test.ts'];
/**
 * Broker suites run beside the process suites instead of after the other broker suites, so the
 * two lanes take about as long (measured: broker 834 s, process 603 s with the first one moved):
 * the benchmarks' smoke, five minutes that measure and assert no time, and the tasks suite.
 */
const KAFKA_BESIDE_PROCESS = ['test/bench/bench.kafka.test.ts', 'test/tasks/tasks.kafka.test.ts'];
const kafkaSetup = ['./packages/kafka-fixtures/src/vitest-global-setup.ts'];

export default defineConfig({
  cacheDir,
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    coverage: {
      // On in the full run only (`npm test` passes --coverage.enabled): the thresholds below are
      // the whole suite's, so a filtered run (one file, `npm run interop`) would fail them.
      enabled: false,
      provider: 'v8',
      include: ['packages/*/src/**/*.ts'],
      reporter: ['text', 'json-summary'],
      // The resume decision is the product: every branch is exercised by a named test.
      thresholds: {
        'packages/protocol/src/resume/resume.ts': {
          branches: 100,
          functions: 100,
          lines: 100,
          statements: 100,
        },
      },
    },
    projects: [
      {
        resolve,
        ssr,
        test: {
          name: 'unit',
          provide,
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: [
            '**/*.kafka.test.ts',
            '**/*.process.test.ts',
            '**/node_modules/**',
            ...CPU_BOUND_UNIT,
          ],
          // Component suites wire a gateway and a worker on the embedded log; on a loaded 2-core
          // machine some need more than vitest's 5 s default.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // First, two files at a time: in-process suites mostly wait on timers and sockets, and a
          // failure here is reported in minutes, not after the broker suites.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        resolve,
        ssr,
        test: {
          // The in-process suites that keep a core busy for minutes: last, alone, so they neither
          // slow nor are slowed by a suite that measures time.
          name: 'cpu-bound',
          provide,
          include: CPU_BOUND_UNIT,
          testTimeout: 600_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
      {
        resolve,
        ssr,
        test: {
          // Suites that start real processes: the CLI, helm, the conformance runner, other
          // languages' clients, the image's payload.
          name: 'process',
          provide,
          include: [
            'packages/*/test/**/*.process.test.ts',
            'test/**/*.process.test.ts',
            ...KAFKA_BESIDE_PROCESS,
          ],
          exclude: ['**/node_modules/**'],
          globalSetup: kafkaSetup,
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // One file at a time beside the broker suites (vitest's default on 2 cores): processes,
          // clusters and timing on a shared machine.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        resolve,
        ssr,
        test: {
          // Suites against a real broker: one broker for the whole run (packages/kafka-fixtures).
          name: 'kafka',
          provide,
          include: ['packages/*/test/**/*.kafka.test.ts', 'test/**/*.kafka.test.ts'],
          exclude: ['**/node_modules/**', ...KAFKA_BESIDE_PROCESS],
          globalSetup: kafkaSetup,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
