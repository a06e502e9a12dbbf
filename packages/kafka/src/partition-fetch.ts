import { fetchV13, IS_CONTROL, type Connection } from '@platformatic/kafka';
import { ErrorCodes, TidemarkError, type FetchResult, type LogRecord } from '@tidemark/protocol';

// One partition read straight from its leader with Kafka's Fetch API, and its answer as log
// records: the reads the log port needs that a consumer (which owns its offsets) does not do.

/** Fetch session epoch -1: a sessionless fetch, so concurrent reads of one broker never interfere. */
const NO_FETCH_SESSION = -1;
const READ_UNCOMMITTED = 0;

type FetchResponse = Awaited<ReturnType<typeof fetchV13.api.async>>;

/** Reads one partition from `fromOffset`, waiting up to `maxWaitMs` for a record. */
export function fetchPartition(
  connection: Connection,
  at: { topicId: string; partition: number; fromOffset: bigint },
  maxBytes: number,
  maxWaitMs: number,
): Promise<FetchResponse> {
  return fetchV13.api.async(
    connection,
    maxWaitMs,
    1,
    maxBytes,
    READ_UNCOMMITTED,
    0,
    NO_FETCH_SESSION,
    [
      {
        topicId: at.topicId,
        partitions: [
          {
            partition: at.partition,
            currentLeaderEpoch: -1,
            fetchOffset: at.fromOffset,
            lastFetchedEpoch: -1,
            partitionMaxBytes: maxBytes,
          },
        ],
      },
    ],
    [],
    '',
  );
}

/** The records of a fetch answer from `fromOffset` on, and where the next read starts. */
export function decodeFetch(
  response: FetchResponse,
  topic: string,
  partition: number,
  fromOffset: bigint,
): FetchResult {
  const answer = response.responses[0]?.partitions.find((p) => p.partitionIndex === partition);
  if (answer === undefined)
    throw new TidemarkError(
      ErrorCodes.logUnavailable,
      `fetch ${topic}/${partition}: no answer for the partition`,
      { retryable: true },
    );
  const records: LogRecord[] = [];
  let nextOffset = fromOffset;
  for (const batch of answer.records ?? []) {
    // Past the batch, whatever it held: control batches (transaction markers) and compacted
    // records leave offsets nobody reads.
    const batchEnd = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
    if (batchEnd > nextOffset) nextOffset = batchEnd;
    if ((batch.attributes & IS_CONTROL) !== 0) continue;
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < fromOffset) continue;
      records.push({
        partition,
        offset,
        key: record.key === null || record.key.length === 0 ? null : record.key.toString(),
        value: record.value,
        headers: record.headers.map(
          ([name, value]) => [name?.toString() ?? '', value?.toString() ?? ''] as const,
        ),
        timestampMs: Number(batch.firstTimestamp + record.timestampDelta),
      });
    }
  }
  return {
    records,
    logStartOffset: answer.logStartOffset,
    highWatermark: answer.highWatermark,
    nextOffset,
  };
}
