// Waiting on the log instead of sleeping: a test that needs the worker to have written something
// polls for it, so a loaded machine that takes longer only makes the test slower, never wrong.
import { readStampedRecord, type LogPort } from '@tidemark/protocol';

/** The record kinds of each stream of one session on a partition, in log order. */
export type StreamKinds = ReadonlyMap<string, readonly string[]>;

/**
 * The partition's offsets once `done` holds of the session's streams there (polled every 50 ms,
 * for up to 30 s; then it throws with what it saw).
 */
export async function whenLogged(
  log: LogPort,
  topic: string,
  partition: number,
  session: string,
  done: (streams: StreamKinds) => boolean,
): Promise<{ logStartOffset: bigint; highWatermark: bigint }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const offsets = await log.offsets(topic, partition);
    const streams = new Map<string, string[]>();
    for (let offset = offsets.logStartOffset; offset < offsets.highWatermark;) {
      const fetched = await log.fetch(topic, partition, offset, { maxWaitMs: 0 });
      for (const record of fetched.records) {
        const stamp = record.key === session ? readStampedRecord(record)?.stamp : undefined;
        if (stamp !== undefined)
          streams.set(stamp.stream, [...(streams.get(stamp.stream) ?? []), stamp.kind]);
      }
      if (fetched.records.length === 0) break;
      offset = fetched.nextOffset;
    }
    if (done(streams)) return offsets;
    if (Date.now() > deadline)
      throw new Error(`not logged after 30 s: ${JSON.stringify([...streams])}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many progress or other messages the session's streams hold. */
export const messages = (streams: StreamKinds): number =>
  [...streams.values()].flat().filter((kind) => kind === 'message').length;

/** Whether a stream that sent messages (a call, not the initialize answer) has ended. */
export const callEnded = (streams: StreamKinds): boolean =>
  [...streams.values()].some((kinds) => kinds.includes('message') && kinds.includes('terminal'));
