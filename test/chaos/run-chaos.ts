// Runs the chaos runner as a child process for a test: stopped REPORT_MS before the test's own
// timeout, so that its report — the calls still under way, the seed — is the failure's message
// instead of a bare timeout.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, onTestFinished } from 'vitest';

const runner = fileURLToPath(new URL('chaos.ts', import.meta.url));
const REPORT_MS = 20_000;

export interface ChaosRun {
  readonly stdout: string;
  /** The faults fired, as the summary names them with their counts. */
  readonly fired: string;
  /** How many calls the run made. */
  readonly calls: number;
}

/** Runs `--profile profile` to its end and expects it to pass; what it printed. */
export async function runChaos(
  profile: string,
  testTimeoutMs: number,
  env: NodeJS.ProcessEnv = {},
): Promise<ChaosRun> {
  const child = spawn(process.execPath, [runner, '--profile', profile], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const stop = setTimeout(() => child.kill('SIGTERM'), testTimeoutMs - REPORT_MS);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(stop);
  // On failure: the seed to replay it with, the summary, and the evidence (the tail of stderr).
  const seed = /seed \d+/.exec(stderr)?.[0];
  expect(code, `chaos failed (${seed}):\n${stdout}\n${stderr.slice(-4000)}`).toBe(0);
  expect(stdout).toMatch(/silently wrong: 0, lost: 0, needless resets: 0/);
  expect(stdout).not.toMatch(/FAILED/);
  return {
    stdout,
    fired: /faults injected: \d+ \((.*)\)/.exec(stdout)?.[1] ?? '',
    calls: Number(/calls: (\d+)/.exec(stdout)?.[1]),
  };
}
