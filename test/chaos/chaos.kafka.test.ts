import { expect, inject, it } from 'vitest';
import { runChaos } from './run-chaos.js';

const TEST_TIMEOUT_MS = 240_000;

it(
  'the chaos runner’s CI profile: calls under random faults, none silently wrong, lost or needlessly reset, most of them answered',
  async () => {
    const run = await runChaos('ci', TEST_TIMEOUT_MS, {
      KAFKA_BROKERS: inject('kafkaBrokers').join(','),
    });
    // The runner's own floors (calls ≥ sessions × seconds / 4, every fault kind fired) held: read
    // back here so a runner that stopped checking them is seen.
    expect(run.calls).toBeGreaterThanOrEqual(Math.ceil((6 * 45) / 4));
    // One client in three calls as a 2026-07-28 client: its calls are tasks.
    expect(Number(/\((\d+) of them tasks\)/.exec(run.stdout)?.[1])).toBeGreaterThan(2);
    for (const kind of [
      'worker kill -9',
      'worker drain (SIGTERM)',
      'gateway kill -9',
      'client sockets cut',
      'clients away while their events are deleted',
    ])
      expect(run.fired).toContain(kind);
  },
  TEST_TIMEOUT_MS,
);
