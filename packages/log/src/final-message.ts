import {
  readStampedRecord,
  type LogPort,
  type PartitionKey,
  type TerminalRecord,
} from '@tidemark/protocol';
import { isEvicted, readRange } from './range-read.js';

/**
 * A finished stream's final message as its head knows it. Kept in the head when it fits one
 * record; a message written in parts (`inLog`) is read from `events` at its offset, and once the
 * log no longer holds it the head's error stands in for it.
 */
export async function finalMessage(
  log: LogPort,
  events: string,
  partition: number,
  session: PartitionKey,
  terminal: TerminalRecord,
): Promise<unknown> {
  if (terminal.inLog !== true) return terminal.payload;
  const range = { from: terminal.offset, until: terminal.offset + 1n, key: session };
  try {
    for await (const raw of readRange(log, events, partition, range)) {
      const record = readStampedRecord(raw);
      if (record?.stamp.kind === 'terminal' && record.payload !== undefined) return record.payload;
    }
  } catch (error) {
    if (!isEvicted(error)) throw error;
  }
  return terminal.payload;
}
