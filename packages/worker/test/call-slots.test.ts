import { describe, expect, it } from 'vitest';
import { CallSlots, slotShareOf } from '../src/calls/call-slots.js';

// The cap is the subject's, over all its requests (security review H2): one subject holding its
// share in calls and more in other requests (pushes that never end) leaves the rest to the others.

const limits = {
  maxConcurrentCalls: 8,
  maxConcurrentTasks: 4,
  maxCallsPerSubject: 4,
  maxTasksPerSubject: 2,
};
const call = { method: 'tools/call' };
const push = { method: 'events/stream' };

describe('CallSlots', () => {
  it("caps a subject's calls and other requests together: the pool's other half stays free", async () => {
    const slots = new CallSlots(limits);
    const aliceCalls = [];
    for (let i = 0; i < 4; i++) aliceCalls.push(await slots.acquire(slotShareOf('alice', call)));
    // Alice at her cap in calls: one request of another kind goes past it (she can still list her
    // tools)…
    const reserve = await slots.acquire(slotShareOf('alice', push));
    // …and no more: they do not take the other half.
    let pushStarted = false;
    const waiting = slots.acquire(slotShareOf('alice', push)).then((slot) => {
      pushStarted = true;
      return slot;
    });
    await Promise.resolve();
    expect(pushStarted).toBe(false);
    expect(slots.occupancy('call')).toMatchObject({ busy: 5, waiting: 1 });
    // Everything else is Bob's, at once.
    expect(slots.freeFor(slotShareOf('bob', call))).toBe(true);
    const bobs = [];
    for (let i = 0; i < 3; i++) bobs.push(await slots.acquire(slotShareOf('bob', push)));
    expect(slots.occupancy('call')).toMatchObject({ busy: 8 });
    // Bob's requests end: Alice is still at her cap, so hers still waits…
    bobs.forEach((slot) => slot.release());
    await Promise.resolve();
    expect(pushStarted).toBe(false);
    // …until one of her own calls ends and frees her a slot.
    aliceCalls[0]!.release();
    (await waiting).release();
    expect(pushStarted).toBe(true);
    reserve.release();
  });

  it("a subject's other requests alone are capped as its calls are (and one past)", async () => {
    const slots = new CallSlots(limits);
    for (let i = 0; i < 5; i++) await slots.acquire(slotShareOf('alice', push));
    expect(slots.freeFor(slotShareOf('alice', call))).toBe(false);
    expect(slots.freeFor(slotShareOf('alice', push))).toBe(false);
    expect(slots.freeFor(slotShareOf('bob', call))).toBe(true);
  });
});
