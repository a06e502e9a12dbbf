import { EmbeddedLog } from '@tidemark/embedded-log';
import { StreamHeadStore } from '@tidemark/log';
import { topicNames, type GroupMembership, type LogRecord } from '@tidemark/protocol';
import { expect, it, onTestFinished } from 'vitest';
import { PartitionReader } from '../src/calls/partition-reader.js';

// A rebalance that races a partition's first read refuses the committed offset (the classic
// protocol's ILLEGAL_GENERATION): the reader asks again and reads from it, instead of stopping the
// partition until the process restarts (what 0.1.0 did, found by the rollback test).

it('a refused read of the committed offset is asked again; the partition is read from it', async () => {
  const log = new EmbeddedLog({ path: ':memory:' });
  const topics = topicNames('reader.');
  log.provisionTopics(topics, { partitions: 1 });
  onTestFinished(() => log.close());
  const value = (n: number) => ({ partition: 0, key: 'k', value: Buffer.from(String(n)) });
  await log.append(topics.requests, [value(0), value(1), value(2)]);
  let asked = 0;
  const membership = {
    committed: () => {
      asked++;
      if (asked < 3)
        return Promise.reject(
          new Error('ILLEGAL_GENERATION: Specified group generation id is not valid.'),
        );
      return Promise.resolve(2n);
    },
  } as unknown as GroupMembership;
  const problems: string[] = [];
  const read: LogRecord[] = [];
  const reader = new PartitionReader({
    log,
    topic: topics.requests,
    partition: 0,
    pollMs: 20,
    membership: Promise.resolve(membership),
    heads: new StreamHeadStore({ port: log, topics, partitionCount: 1 }),
    onRecord: (record) => {
      read.push(record);
      return Promise.resolve();
    },
    onProblem: (problem) => problems.push(problem),
  });
  onTestFinished(() => reader.stop());
  await expect.poll(() => read.length, { timeout: 5_000 }).toBe(1);
  expect(read[0]?.offset).toBe(2n);
  expect(asked).toBe(3);
  expect(problems).toEqual([
    'reading the committed offset of requests 0; asking again',
    'reading the committed offset of requests 0; asking again',
  ]);
});
