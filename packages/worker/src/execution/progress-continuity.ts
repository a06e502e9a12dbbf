import { readRange } from '@tidemark/log';
import {
  progressOf,
  readStampedRecord,
  type LogPort,
  type PartitionKey,
  type StreamHead,
} from '@tidemark/protocol';

// Progress stays strictly increasing across the generations of a call (the spec: "the progress
// value MUST increase with each notification"). A retry or a takeover runs the tool again, which
// counts from the start; its progress is written continuing the numbering of the generation before
// (`base + progress`, and `base + total`), so a client that ignores `notifications/tidemark/reset`
// still sees 1, 2, then 3, 4 … never 1, 2, 1, 2. Every replica replays the values as written.

interface ProgressParams {
  progress?: unknown;
  total?: unknown;
}

/** The message with its progress (and total) continued past `base`. */
export function continueProgress<M>(message: M, base: number): M {
  if (base === 0 || progressOf(message) === undefined) return message;
  const { params } = message as { params: ProgressParams };
  return {
    ...message,
    params: {
      ...params,
      progress: base + (params.progress as number),
      ...(typeof params.total === 'number' ? { total: base + params.total } : {}),
    },
  };
}

/**
 * The highest progress earlier workers wrote in a stream's generations from `previous` on, before
 * `until` — the start of the generation that takes over. Read after that start is in the log, so
 * nothing a reader keeps can land later (an older generation's record after it is dropped as
 * superseded). What retention or `deleteRecords` removed is not there to read: 0 when all of it is gone.
 */
export async function lastProgressInLog(
  port: LogPort,
  topic: string,
  partition: number,
  session: PartitionKey,
  previous: StreamHead,
  until: bigint,
): Promise<number> {
  let last = 0;
  const range = { from: previous.startOffset, until, key: session, evicted: 'skip' } as const;
  // Deleted under the call (retention, deleteRecords): what is left is read. The numbering may
  // then start lower than a client saw — the one case the contract allows.
  for await (const raw of readRange(port, topic, partition, range)) {
    const record = readStampedRecord(raw);
    if (
      record === undefined ||
      record.stamp.stream !== previous.stream ||
      record.stamp.generation.attempt < previous.generation.attempt
    )
      continue;
    last = Math.max(last, progressOf(record.payload) ?? 0);
  }
  return last;
}
