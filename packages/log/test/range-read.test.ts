import { EmbeddedLog } from '@tidemark/embedded-log';
import { ErrorCodes, topicNames, type LogRecord } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readRange } from '../src/index.js';

/** A partition of ten records, keyed a, b, a, b, … (offsets 0–9). */
async function tenRecords() {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  const names = topicNames('r.');
  log.provisionTopics(names, { partitions: 1 });
  const records = Array.from({ length: 10 }, (_, i) => ({
    partition: 0,
    key: i % 2 === 0 ? 'a' : 'b',
    value: new TextEncoder().encode(String(i)),
    headers: [],
  }));
  for (const record of records) await log.append(names.events, [record]);
  return { log, topic: names.events };
}

async function offsetsOf(records: AsyncIterable<LogRecord>): Promise<number[]> {
  const seen: number[] = [];
  for await (const record of records) seen.push(Number(record.offset));
  return seen;
}

describe('readRange: one bounded read of a partition', () => {
  it('reads [from, until) in log order, and only the key asked for', async () => {
    const { log, topic } = await tenRecords();
    expect(await offsetsOf(readRange(log, topic, 0, { from: 2n, until: 7n }))).toEqual([
      2, 3, 4, 5, 6,
    ]);
    expect(await offsetsOf(readRange(log, topic, 0, { from: 0n, until: 10n, key: 'b' }))).toEqual([
      1, 3, 5, 7, 9,
    ]);
    expect(await offsetsOf(readRange(log, topic, 0, { from: 5n, until: 5n }))).toEqual([]);
  });

  it('records deleted under the read: thrown by default, skipped to what is left when asked', async () => {
    const { log, topic } = await tenRecords();
    await log.deleteRecordsBefore(topic, 0, 4n);
    await expect(offsetsOf(readRange(log, topic, 0, { from: 1n, until: 10n }))).rejects.toThrow(
      expect.objectContaining({ code: ErrorCodes.offsetOutOfRange }),
    );
    const left = readRange(log, topic, 0, { from: 1n, until: 10n, key: 'a', evicted: 'skip' });
    expect(await offsetsOf(left)).toEqual([4, 6, 8]);
  });
});
