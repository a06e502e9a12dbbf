import { describe, expect, it } from 'vitest';
import { backoffMs } from '../src/index.js';

describe('backoff', () => {
  it('doubles from the first wait up to the longest', () => {
    const waits = [0, 1, 2, 3, 4, 5, 6, 100].map((attempt) => backoffMs(attempt, { maxMs: 1_000 }));
    expect(waits).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000]);
    expect(backoffMs(2, { initialMs: 250, maxMs: 5_000 })).toBe(1_000);
  });

  it('with jitter, waits a random half to all of it', () => {
    for (let i = 0; i < 200; i++) {
      const wait = backoffMs(3, { maxMs: 5_000, jitter: true });
      expect(wait).toBeGreaterThanOrEqual(400);
      expect(wait).toBeLessThanOrEqual(800);
    }
  });
});
