import { expect, it } from 'vitest';
import { runChaos } from './run-chaos.js';

// The chaos runner's short partitions profile (issue #56): the broker and every process on a host
// of its own, hosts cut apart at random while calls run; the runner's own checker and effect
// counts judge every call, and it reports per fault. Needs root (namespaces, iptables), as CI has.

const TEST_TIMEOUT_MS = 240_000;

it(
  'network partitions at random (workers and gateways cut from the broker, gateways from their clients): none silently wrong, lost or needlessly reset, no effect applied twice',
  async () => {
    const run = await runChaos('partitions-ci', TEST_TIMEOUT_MS);
    expect(run.calls).toBeGreaterThanOrEqual(Math.ceil((4 * 60) / 4));
    expect(run.stdout).toMatch(/duplicated: 0, lost: 0/);
    for (const kind of [
      'worker cut from the broker past its session timeout',
      'worker cut from the broker within its session timeout',
      'gateway cut from the broker',
      'gateway cut from its clients',
    ]) {
      expect(run.fired).toContain(kind);
      // Reported per fault, with what became of the calls it reached.
      expect(run.stdout).toMatch(new RegExp(`${kind} ×\\d+: \\d+ calls under way`));
    }
  },
  TEST_TIMEOUT_MS,
);
