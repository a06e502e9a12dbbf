import {
  ErrorCodes,
  foldStreamHead,
  isTidemarkError,
  readStampedRecord,
  sameGeneration,
  type LogPort,
  type PartitionKey,
  type StreamHead,
} from '@tidemark/protocol';

/**
 * What `events` decides of a stream whose stored head says it finished — the log's order decides a
 * stream, the head only remembers it.
 *
 * A worker learns that its partition went to another member only after the group has rebalanced:
 * meanwhile the new owner may start the stream's next generation, and the old one may still finish
 * its own. Its terminal record then loses to the newer generation in `events` (gateways fold it
 * away), but its finished head, written last, would tell a redelivery that the call is done — and
 * nobody would ever run the newer generation to its end: a call accepted and never answered. So a
 * finished head is trusted when nothing but its own records lies between its start and its end
 * (their offsets are contiguous), or when the stream's records between them, folded, agree.
 * Otherwise the head the fold leaves — the newer generation's, unfinished — is returned.
 */
export async function decidedHead(
  port: LogPort,
  topic: string,
  partition: number,
  session: PartitionKey,
  stored: StreamHead,
): Promise<StreamHead> {
  const { terminal } = stored;
  if (terminal === undefined) return stored;
  if (terminal.offset - stored.startOffset === BigInt(terminal.seq)) return stored;
  let folded: StreamHead | undefined;
  for (let offset = stored.startOffset; offset <= terminal.offset;) {
    let fetched;
    try {
      fetched = await port.fetch(topic, partition, offset, { maxWaitMs: 0 });
    } catch (error) {
      // Its events expired: the head is all that is left of the stream.
      if (isTidemarkError(error) && error.code === ErrorCodes.offsetOutOfRange) return stored;
      throw error;
    }
    for (const raw of fetched.records) {
      if (raw.offset > terminal.offset || raw.key !== session) continue;
      const record = readStampedRecord(raw);
      if (record?.stamp.stream === stored.stream) folded = foldStreamHead(folded, record).head;
    }
    if (fetched.records.length === 0 || fetched.nextOffset <= offset) break;
    offset = fetched.nextOffset;
  }
  if (folded === undefined) return stored;
  const agrees =
    folded.terminal !== undefined && sameGeneration(folded.generation, stored.generation);
  return agrees ? stored : folded;
}
