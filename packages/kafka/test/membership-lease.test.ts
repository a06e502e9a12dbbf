import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MembershipLease } from '../src/membership-lease.js';

// The lease that stops a cut-off member's partitions before the broker can give them away.

describe('MembershipLease', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('lapses a session timeout after the send of the last answered heartbeat, not after its answer', () => {
    const changes: boolean[] = [];
    const lease = new MembershipLease(6_000, (lapsed) => changes.push(lapsed));
    const sentAt = Date.now();
    vi.advanceTimersByTime(1_500); // the answer comes late
    lease.confirm(sentAt);
    vi.advanceTimersByTime(4_499);
    expect(lease.lapsed).toBe(false);
    vi.advanceTimersByTime(1);
    expect(lease.lapsed).toBe(true);
    expect(changes).toEqual([true]);
  });

  it('each answered heartbeat moves it on; an answer to an older one does not move it back', () => {
    const changes: boolean[] = [];
    const lease = new MembershipLease(6_000, (lapsed) => changes.push(lapsed));
    const first = Date.now();
    lease.confirm(first);
    vi.advanceTimersByTime(4_000);
    lease.confirm(Date.now());
    lease.confirm(first);
    vi.advanceTimersByTime(5_999);
    expect(changes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(changes).toEqual([true]);
  });

  it('a lapsed lease is taken up again by a heartbeat answered after it, never by one sent before', () => {
    const changes: boolean[] = [];
    const lease = new MembershipLease(6_000, (lapsed) => changes.push(lapsed));
    const sentAt = Date.now();
    lease.confirm(sentAt);
    vi.advanceTimersByTime(7_000);
    const stale = Date.now() - 6_500; // sent before the lapse, answered after it
    lease.confirm(stale);
    expect(lease.lapsed).toBe(true);
    lease.confirm(Date.now());
    expect(lease.lapsed).toBe(false);
    expect(changes).toEqual([true, false]);
  });

  it('stopped, it never lapses', () => {
    const onChange = vi.fn();
    const lease = new MembershipLease(6_000, onChange);
    lease.confirm(Date.now());
    lease.stop();
    vi.advanceTimersByTime(60_000);
    expect(onChange).not.toHaveBeenCalled();
  });
});
