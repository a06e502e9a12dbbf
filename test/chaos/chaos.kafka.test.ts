import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, inject, it } from 'vitest';

const runner = fileURLToPath(new URL('chaos.ts', import.meta.url));

it('the chaos runner’s CI profile: calls under random faults, none silently wrong, lost or needlessly reset, most of them answered', async () => {
  const child = spawn(process.execPath, [runner, '--profile', 'ci'], {
    env: { ...process.env, KAFKA_BROKERS: inject('kafkaBrokers').join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  // On failure: the seed to replay it with, the summary, and the evidence (the tail of stderr).
  const seed = /seed \d+/.exec(stderr)?.[0];
  expect(code, `chaos failed (${seed}):\n${stdout}\n${stderr.slice(-4000)}`).toBe(0);
  expect(stdout).toMatch(/silently wrong: 0, lost: 0, needless resets: 0/);
  expect(stdout).not.toMatch(/FAILED/);
  const calls = Number(/calls: (\d+)/.exec(stdout)?.[1]);
  const faults = Number(/faults injected: (\d+)/.exec(stdout)?.[1]);
  expect(calls).toBeGreaterThan(10);
  // One client in three calls as a 2026-07-28 client: its calls are tasks.
  expect(Number(/\((\d+) of them tasks\)/.exec(stdout)?.[1])).toBeGreaterThan(2);
  expect(faults).toBeGreaterThan(3);
}, 240_000);
