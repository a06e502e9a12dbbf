import type { StepRecord } from '@tidemark/log';
import { describe, expect, it } from 'vitest';
import { memorySteps } from './memory-steps.js';

// A worker that lost a call's partition with no handoff notice in the log (cut off from the group
// past its session timeout) is fenced: its next owner runs the call again without waiting, so a
// step the zombie took now would reach the world twice. The chaos run that found it: a step run on
// the new owner, then 6 s later again on the zombie, once the network healed.

function harness(state: { fenced: boolean; stopped: boolean }, onWait?: () => void) {
  const journal = new Map<string, StepRecord>();
  const ran: string[] = [];
  const steps = memorySteps(journal, {
    replay: true,
    fenced: () => state.fenced,
    stopped: () => state.stopped,
    // The fence's poll: each wait is a moment in which the worker's state may change.
    sleep: () => Promise.resolve(onWait?.()),
  });
  const step = steps.forExecution('e.1').step;
  const charge = () => step('charge', () => void ran.push('charge'));
  return { journal, ran, charge };
}

describe('a fenced call takes no step', () => {
  it('waits while fenced and gives up once its partition is dropped: the function never runs, nothing is journaled', async () => {
    let waits = 0;
    const state = { fenced: true, stopped: false };
    const { journal, ran, charge } = harness(state, () => {
      if (++waits === 3) state.stopped = true;
    });
    await expect(charge()).rejects.toThrow(/lost the call's partition/);
    expect(waits).toBe(3);
    expect(ran).toEqual([]);
    expect(journal.size).toBe(0);
  });

  it('goes on when the fence lifts before the call is stopped', async () => {
    const state = { fenced: true, stopped: false };
    const { journal, ran, charge } = harness(state, () => void (state.fenced = false));
    await charge();
    expect(ran).toEqual(['charge']);
    expect(journal.get('charge')).toMatchObject({ outcome: { ok: true } });
  });

  it('replays a step journaled before the fence: that has no effect to repeat', async () => {
    const state = { fenced: false, stopped: false };
    const first = harness(state);
    await first.charge();
    state.fenced = true;
    state.stopped = true;
    const again = memorySteps(first.journal, {
      replay: true,
      fenced: () => state.fenced,
      stopped: () => state.stopped,
    }).forExecution('e.2').step;
    await expect(again('charge', () => 'ran again')).resolves.toBeUndefined();
  });
});
