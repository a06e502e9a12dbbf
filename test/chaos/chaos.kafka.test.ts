import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, inject, it, onTestFinished } from 'vitest';

const runner = fileURLToPath(new URL('chaos.ts', import.meta.url));
const TEST_TIMEOUT_MS = 240_000;
/** The runner is stopped this long before vitest's timeout, so its report — the calls still under way, the seed — is the failure's message instead of a bare timeout. */
const REPORT_MS = 20_000;

it(
  'the chaos runner’s CI profile: calls under random faults, none silently wrong, lost or needlessly reset, most of them answered',
  async () => {
    const child = spawn(process.execPath, [runner, '--profile', 'ci'], {
      env: { ...process.env, KAFKA_BROKERS: inject('kafkaBrokers').join(',') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const stop = setTimeout(() => child.kill('SIGTERM'), TEST_TIMEOUT_MS - REPORT_MS);
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
    // The runner's own floors (calls ≥ sessions × seconds / 4, every fault kind fired) held: read
    // back here so a runner that stopped checking them is seen.
    const calls = Number(/calls: (\d+)/.exec(stdout)?.[1]);
    expect(calls).toBeGreaterThanOrEqual(Math.ceil((6 * 45) / 4));
    // One client in three calls as a 2026-07-28 client: its calls are tasks.
    expect(Number(/\((\d+) of them tasks\)/.exec(stdout)?.[1])).toBeGreaterThan(2);
    const fired = /faults injected: \d+ \((.*)\)/.exec(stdout)?.[1] ?? '';
    for (const kind of [
      'worker kill -9',
      'worker drain (SIGTERM)',
      'gateway kill -9',
      'client sockets cut',
      'clients away while their events are deleted',
    ])
      expect(fired).toContain(kind);
  },
  TEST_TIMEOUT_MS,
);
