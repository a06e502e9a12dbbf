import { mkdirSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { type Durations, lastDurations, RESULTS_DIR, rootDir } from './durations.ts';

const SLOWEST = 15;

/** A file's whole cost: its environment, imports and every test and hook, in seconds. */
function seconds(testModule: TestModule): number {
  const d = testModule.diagnostic();
  const ms =
    d.environmentSetupDuration +
    d.prepareDuration +
    d.collectDuration +
    d.setupDuration +
    d.duration;
  return Math.round(ms) / 1000;
}

/**
 * Prints one plain closing line, `vitest: N passed, N failed[, N skipped]`, that tools reading test
 * logs understand without knowing vitest's own summary format — and, before it, where the time
 * went: each project's summed file time and the slowest files, beside the last full run's
 * (`npm test` keeps it in the cache). The durations go to test-results/durations.json.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const durations = this.#durations(testModules);
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(`${RESULTS_DIR}/durations.json`, `${JSON.stringify(durations, null, 2)}\n`);
    process.stdout.write(this.#timeReport(durations, lastDurations()));
    process.stdout.write(this.#countLine(testModules));
    const failures = this.#failures(testModules);
    // CI shows only a run's tail, which the broker's log follows: .ci/run prints this file last.
    writeFileSync(`${RESULTS_DIR}/failures.txt`, failures);
    process.stdout.write(failures);
  }

  /** Each failed test (or file that failed outside its tests) with its error's first lines. */
  #failures(testModules: ReadonlyArray<TestModule>): string {
    const lines: string[] = [];
    const add = (where: string, errors: ReadonlyArray<{ message?: string }> | undefined) => {
      const message = (errors?.[0]?.message ?? 'no error recorded').split('\n').slice(0, 4);
      lines.push(`FAILED ${where}`, ...message.map((line) => `    ${line.slice(0, 300)}`));
    };
    for (const testModule of testModules) {
      const file = relative(rootDir, testModule.moduleId);
      if (testModule.state() === 'failed' && testModule.errors().length > 0)
        add(file, testModule.errors());
      for (const test of testModule.children.allTests())
        if (test.result().state === 'failed')
          add(`${file} > ${test.fullName}`, test.result().errors);
    }
    return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  }

  #durations(testModules: ReadonlyArray<TestModule>): Durations {
    const files: Durations['files'] = {};
    const projects: Record<string, number> = {};
    for (const testModule of testModules) {
      const project = testModule.project.name;
      const s = seconds(testModule);
      files[relative(rootDir, testModule.moduleId)] = { project, seconds: s };
      projects[project] = Math.round(((projects[project] ?? 0) + s) * 1000) / 1000;
    }
    return { recordedAt: new Date().toISOString(), projects, files };
  }

  #timeReport(now: Durations, last: Durations | undefined): string {
    const was = (s: number | undefined) =>
      s === undefined ? '' : ` (last full run ${s.toFixed(1)})`;
    const lines = ['', 'vitest time by project, summed over its files (s):'];
    for (const [project, s] of Object.entries(now.projects))
      lines.push(`  ${project.padEnd(8)} ${s.toFixed(1)}${was(last?.projects[project])}`);
    lines.push(`the ${SLOWEST} slowest files (s):`);
    const slowest = Object.entries(now.files)
      .sort(([, a], [, b]) => b.seconds - a.seconds)
      .slice(0, SLOWEST);
    for (const [file, { project, seconds: s }] of slowest)
      lines.push(
        `  ${s.toFixed(1).padStart(7)}  ${file} [${project}]${was(last?.files[file]?.seconds)}`,
      );
    return `${lines.join('\n')}\n`;
  }

  #countLine(testModules: ReadonlyArray<TestModule>): string {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const testModule of testModules) {
      if (testModule.state() === 'failed' && [...testModule.children.allTests()].length === 0)
        failed++;
      for (const test of testModule.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
    }
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    return `\nvitest: ${passed} passed, ${failed} failed${tail}\n`;
  }
}
