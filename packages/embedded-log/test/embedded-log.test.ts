import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCodes } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EmbeddedLog } from '../src/index.js';

const value = (s: string) => Buffer.from(s);

describe('EmbeddedLog', () => {
  it('is durable: a reopened file has the same records, offsets and identity', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tidemark-embedded-')), 'log.sqlite');
    const first = new EmbeddedLog({ path, topics: [{ name: 'events', partitions: 2 }] });
    await first.append('events', [
      { partition: 1, key: 's', value: value('a') },
      { partition: 1, key: 's', value: value('b') },
    ]);
    await first.deleteRecordsBefore('events', 1, 1n);
    const identity = await first.identity('events');
    await first.close();

    const second = new EmbeddedLog({ path, topics: [{ name: 'events', partitions: 2 }] });
    onTestFinished(() => second.close());
    expect(await second.identity('events')).toEqual(identity);
    expect(await second.offsets('events', 1)).toEqual({ logStartOffset: 1n, highWatermark: 2n });
    expect(
      (await second.append('events', [{ partition: 1, key: 's', value: value('c') }]))[0],
    ).toBe(2n);
  });

  it('one process per file: a second open is refused, naming the holder, until the first closes', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tidemark-embedded-')), 'log.sqlite');
    const first = new EmbeddedLog({ path, topics: [{ name: 'events', partitions: 1 }] });
    let refusal: unknown;
    try {
      new EmbeddedLog({ path, topics: [{ name: 'events', partitions: 1 }] });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: ErrorCodes.logLocked });
    expect((refusal as Error).message).toContain(`process ${process.pid} on `);
    await first.close();
    const second = new EmbeddedLog({ path, topics: [{ name: 'events', partitions: 1 }] });
    await second.close();
  });

  it('a new file is a new log: ids minted against the old one are recognisably foreign', async () => {
    const a = new EmbeddedLog({ path: ':memory:', topics: [{ name: 'events', partitions: 1 }] });
    const b = new EmbeddedLog({ path: ':memory:', topics: [{ name: 'events', partitions: 1 }] });
    onTestFinished(async () => {
      await Promise.all([a.close(), b.close()]);
    });
    expect((await a.identity('events')).clusterId).not.toBe((await b.identity('events')).clusterId);
  });

  it('refuses to reopen a topic with another partition count or cleanup policy', () => {
    const log = new EmbeddedLog({ path: ':memory:', topics: [{ name: 'events', partitions: 2 }] });
    onTestFinished(() => log.close());
    expect(() => log.createTopic({ name: 'events', partitions: 3 })).toThrow(
      /exists with 2 partitions/,
    );
    expect(() => log.createTopic({ name: 'events', partitions: 2, cleanup: 'compact' })).toThrow(
      /cleanup delete/,
    );
    expect(() => log.createTopic({ name: 'x', partitions: 0 })).toThrow(TypeError);
  });

  it('applies retention by record count and by time, moving the log start offset', async () => {
    let now = 1_000;
    const log = new EmbeddedLog({
      path: ':memory:',
      now: () => now,
      topics: [
        { name: 'by-count', partitions: 1, retentionRecords: 3 },
        { name: 'by-time', partitions: 1, retentionMs: 500 },
      ],
    });
    onTestFinished(() => log.close());
    await log.append(
      'by-count',
      Array.from({ length: 5 }, () => ({ partition: 0, key: 'k', value: value('x') })),
    );
    await log.append('by-time', [{ partition: 0, key: 'k', value: value('old') }]);
    now = 2_000;
    await log.append('by-time', [{ partition: 0, key: 'k', value: value('new') }]);
    log.enforceRetention();
    expect(await log.offsets('by-count', 0)).toEqual({ logStartOffset: 2n, highWatermark: 5n });
    expect(await log.offsets('by-time', 0)).toEqual({ logStartOffset: 1n, highWatermark: 2n });
    now = 10_000;
    log.enforceRetention();
    expect(await log.offsets('by-time', 0)).toEqual({ logStartOffset: 2n, highWatermark: 2n });
  });

  it('compacts compacted topics past the lag and gives the freed pages back: the file follows what is live', async () => {
    let now = 1_000;
    const path = join(mkdtempSync(join(tmpdir(), 'tidemark-embedded-')), 'log.sqlite');
    const log = new EmbeddedLog({
      path,
      now: () => now,
      compactionLagMs: 1_000,
      topics: [{ name: 'table', partitions: 1, cleanup: 'compact' }],
    });
    onTestFinished(() => log.close());
    const big = Buffer.alloc(2_000, 'x');
    for (let round = 0; round < 5; round++)
      await log.append(
        'table',
        Array.from({ length: 500 }, (_, i) => ({ partition: 0, key: `k${i}`, value: big })),
      );
    const grown = statSync(path).size;
    log.enforceRetention();
    const count = async () => {
      let n = 0;
      for (let from = 0n; from < 2_500n;) {
        const read = await log.fetch('table', 0, from);
        n += read.records.length;
        from = read.nextOffset;
      }
      return n;
    };
    expect(await count()).toBe(2_500); // all younger than the lag
    now = 2_500;
    // Half the keys end (tombstones); their tombstones stay for the lag, so readers see them.
    await log.append(
      'table',
      Array.from({ length: 250 }, (_, i) => ({ partition: 0, key: `k${i}`, value: null })),
    );
    log.enforceRetention();
    expect(await count()).toBe(250 + 250); // the live half, and the tombstones of the other

    now = 10_000;
    log.enforceRetention();
    const kept = await log.fetch('table', 0, 0n);
    expect(new Set(kept.records.map((r) => r.key)).size).toBe(kept.records.length);
    expect(await count()).toBe(251); // the live half, and the last record (a tombstone)
    // The checkpointed WAL and the vacuumed file are a fraction of what they were.
    await log.close();
    expect(statSync(path).size).toBeLessThan(grown / 3);
  });

  it('says it is closed instead of crashing', async () => {
    const log = new EmbeddedLog({ path: ':memory:', topics: [{ name: 'events', partitions: 1 }] });
    const waiting = log.fetch('events', 0, 0n, { maxWaitMs: 10_000 });
    await log.close();
    await expect(waiting).rejects.toMatchObject({ code: ErrorCodes.closed });
    await expect(log.offsets('events', 0)).rejects.toMatchObject({ code: ErrorCodes.closed });
  });
});
