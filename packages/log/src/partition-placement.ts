import {
  ErrorCodes,
  TidemarkError,
  type LogPort,
  type TopicNames,
  partitionOfRecordKey,
} from '@tidemark/protocol';

// A key's partition is its hash modulo the partition count (`partitionForSession`), so adding
// partitions to live topics (`kafka-topics --alter`) moves most keys: the sessions, heads and
// events already written sit where a process started now no longer looks. Nothing in the log says
// how many partitions the topics had; the records do — each was written where its key hashed when
// it was written. This reads the oldest few of each partition of `sessions` (compacted: a live
// session's record stays) and `events` and says which no longer hash where they are.

/** Records read from the start of each partition: a mismatch shows in ~1 of 2 after a doubling. */
const SAMPLE_PER_PARTITION = 16;
/** The topics whose record keys are routing keys, hashed whole. */
const KEYED_BY_ROUTING: ReadonlyArray<keyof TopicNames> = ['sessions', 'events'];

/** What was found misplaced, in words an operator can act on; empty when nothing is. */
export async function partitionPlacementProblems(
  port: LogPort,
  topics: TopicNames,
  partitionCount: number,
): Promise<string[]> {
  const problems: string[] = [];
  for (const role of KEYED_BY_ROUTING) {
    const topic = topics[role];
    const keys: Array<{ partition: number; key: string }> = [];
    let misplaced = 0;
    for (let partition = 0; partition < partitionCount; partition++) {
      const { logStartOffset, highWatermark } = await port.offsets(topic, partition);
      if (highWatermark === logStartOffset) continue;
      const { records } = await port.fetch(topic, partition, logStartOffset, {
        maxWaitMs: 0,
        maxBytes: 64 * 1024,
      });
      for (const { key } of records.slice(0, SAMPLE_PER_PARTITION)) {
        if (key === null) continue;
        keys.push({ partition, key });
        if (partitionOfRecordKey(key, partitionCount) !== partition) misplaced++;
      }
    }
    if (misplaced === 0) continue;
    const earlier = countsExplaining(keys, partitionCount);
    problems.push(
      `${topic} holds records written when the topics had ${earlier.length > 0 ? earlier.join(' or ') : 'another number of'} partitions, not ${partitionCount} (${misplaced} of the ${keys.length} read no longer hash where they are): partitions were added to live topics, and the sessions, tasks and streams already written would not be found`,
    );
  }
  return problems;
}

/**
 * Refuses to serve topics whose records no longer hash where they are, saying what changed and the
 * way out (docs/scaling.md, "Changing the partition count").
 */
export async function checkPartitionPlacement(
  port: LogPort,
  topics: TopicNames,
  partitionCount: number,
): Promise<void> {
  const problems = await partitionPlacementProblems(port, topics, partitionCount);
  if (problems.length === 0) return;
  throw new TidemarkError(
    ErrorCodes.topicMismatch,
    `Tidemark topics do not match what they must be:\n  - ${problems.join('\n  - ')}\n` +
      'Kafka cannot take partitions away. Deploy onto new topics with the count you want ' +
      '(`tidemark topics create --prefix <new prefix> --partitions <n>`), move the clients to ' +
      'them, and let these drain (docs/scaling.md, "Changing the partition count").',
  );
}

/** Smaller partition counts under which every key read sits where it hashes. */
function countsExplaining(
  keys: ReadonlyArray<{ partition: number; key: string }>,
  now: number,
): number[] {
  const highest = Math.max(...keys.map((k) => k.partition));
  const counts: number[] = [];
  for (let count = highest + 1; count < now; count++)
    if (keys.every((k) => partitionOfRecordKey(k.key, count) === k.partition)) counts.push(count);
  return counts;
}
