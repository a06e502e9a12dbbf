import { describe, expect, it } from 'vitest';
import {
  keyInPartitions,
  keyOnPartition,
  parseSessionId,
  partitionForSession,
  partitionTag,
} from '../src/index.js';

describe('keys minted onto partitions', () => {
  it('lands a key on the partition asked for, tagged with it, a valid session id', () => {
    for (const count of [1, 12, 64, 1000])
      for (const partition of new Set([0, 1, count - 1].filter((p) => p < count))) {
        const key = keyOnPartition(partition, count);
        expect(partitionForSession(key, count)).toBe(partition);
        expect(key.startsWith(partitionTag(partition, count)!)).toBe(true);
        expect(parseSessionId(key)).toBe(key);
      }
  });

  it('refuses a partition the topic does not have', () => {
    expect(() => keyOnPartition(12, 12)).toThrow(RangeError);
    expect(() => keyOnPartition(-1, 12)).toThrow(/expected 0 to 11/);
  });

  it('tags with p and the partition in three base-36 digits', () => {
    expect(partitionTag(0, 12)).toBe('p000');
    expect(partitionTag(35, 64)).toBe('p00z');
    expect(partitionTag(46_655, 46_656)).toBe('pzzz');
    // Past what four characters can name, keys are drawn untagged (and cost as many hashes).
    expect(partitionTag(0, 46_657)).toBeUndefined();
    const key = keyOnPartition(46_000, 46_657);
    expect(partitionForSession(key, 46_657)).toBe(46_000);
    expect(key).toHaveLength(22);
  });

  it('lands an untagged key in a set of partitions', () => {
    const wanted = new Set([3, 7, 11]);
    const keys = Array.from({ length: 200 }, () => keyInPartitions(wanted, 12));
    for (const key of keys) {
      expect(wanted.has(partitionForSession(key, 12))).toBe(true);
      expect(key).toHaveLength(22);
    }
    // Every partition of the set gets keys, and no two keys are the same.
    expect(new Set(keys.map((k) => partitionForSession(k, 12)))).toEqual(wanted);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('draws fresh randomness for every key', () => {
    const keys = Array.from({ length: 500 }, () => keyOnPartition(5, 12));
    expect(new Set(keys).size).toBe(500);
    expect(new Set(keys.map((k) => k.slice(4, 8))).size).toBeGreaterThan(450);
  });
});
