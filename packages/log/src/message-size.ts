import { JsonRpcErrorCodes, type TerminalRecord } from '@tidemark/protocol';

// How large a message the log takes. Up to one record of `events` (the topics' max.message.bytes
// less room for headers) a message is one record; up to the result limit it is written in parts,
// which the log ports join on read; past that it is not written, and what is written says why.

/** What one record of `events` carries by default: the topics' 4 MiB + 64 KiB, less the headers' room. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024;

export interface MessageLimits {
  /** Bytes of one record's value; larger ones are written in parts. */
  readonly messageBytes: number;
  /** Bytes of one message written at all. */
  readonly resultBytes: number;
}

/** A message as the log holds it: the message written, and its value. */
export interface FittedMessage {
  readonly message: unknown;
  readonly value: Buffer | null;
}

/**
 * The record's value: the message as JSON, or — larger than the limit — what is said instead: the
 * final message becomes an error naming its size and the limit (its request is answered, never
 * retried forever); a message before it becomes a `notifications/message` saying what was not
 * carried.
 */
export function fitMessage(
  message: unknown,
  terminal: boolean,
  limits: MessageLimits,
): FittedMessage {
  if (message === undefined) return { message, value: null };
  const value = Buffer.from(JSON.stringify(message));
  const limit = limits.resultBytes;
  if (value.length <= limit) return { message, value };
  const what = `${value.length} bytes, more than the ${limit} this server carries (maxResultBytes)`;
  const id = (message as { id?: unknown }).id;
  const instead =
    terminal && id !== undefined
      ? internalError(id, `the answer is ${what}; it was not delivered`, {
          bytes: value.length,
          limit,
        })
      : {
          jsonrpc: '2.0',
          method: 'notifications/message',
          params: {
            level: 'error',
            logger: 'tidemark',
            data: `a message of ${what} was not delivered`,
          },
        };
  return { message: instead, value: Buffer.from(JSON.stringify(instead)) };
}

/**
 * The final record as the stream's head keeps it. A message in parts does not fit the head's one
 * record: the head says it is in the log (`inLog`) and keeps, in its place, the error a reader
 * answers with once the log no longer holds it — a release that does not know `inLog` answers it
 * too, never a call without an answer.
 */
export function keptFinal(
  seq: number,
  offset: bigint,
  fitted: FittedMessage,
  limits: MessageLimits,
): TerminalRecord {
  const bytes = fitted.value?.length ?? 0;
  if (bytes <= limits.messageBytes) return { seq, offset, payload: fitted.message };
  const id = (fitted.message as { id?: unknown }).id;
  const payload =
    id === undefined
      ? undefined
      : internalError(
          id,
          `the answer (${bytes} bytes, written in parts) is no longer held by the log; it cannot be delivered again`,
          { bytes, offset: String(offset) },
        );
  return { seq, offset, payload, inLog: true };
}

function internalError(id: unknown, what: string, data: Record<string, unknown>): unknown {
  return {
    jsonrpc: '2.0',
    id,
    error: { code: JsonRpcErrorCodes.internalError, message: `Internal error: ${what}`, data },
  };
}
