import { timingSafeEqual } from 'node:crypto';
import { ByteReader, ByteWriter } from '../bytes.js';
import { logIdOf, type LogIdentity } from '../ids/event-id.js';
import type { Keyring } from '../keys/keyring.js';
import {
  contextTag,
  MAC_BYTES,
  openToken,
  tokenMac,
  type TokenProblem,
  type TokenVerification,
} from '../keys/keyed-token.js';

/**
 * The cursor of an event stream: a position in the log, authenticated like an SSE event id, and
 * bound to its stream, so a client can hold it but not forge or move it, and a cursor of one
 * stream (or one deployment) is refused by another.
 *
 * Binary layout (version 1), base64url without padding:
 *   version u8 | key id u8 | log id 8B | stream tag 4B | partition varint | offset varint | MAC 16B
 * The offset is the next occurrence's: a poll from this cursor reads from there on.
 */
export const EVENT_CURSOR_VERSION = 1;

const LOG_ID_BYTES = 8;
const STREAM_TAG_BYTES = 4;
const MAX_CURSOR_LENGTH = 128;
const STREAM_TAG_LABEL = 'event-stream-tag';

/** Where an event stream's reader is: the next occurrence's partition and offset. */
export interface EventCursorPosition {
  readonly logIdentity: LogIdentity;
  readonly partition: number;
  readonly offset: bigint;
}

/** A verified cursor: its position, and the log id it names (compared with the current log's). */
export interface EventCursorClaim {
  readonly partition: number;
  readonly offset: bigint;
  readonly logId: string;
}

/** Why a cursor was refused. */
export type EventCursorProblem = TokenProblem | 'other-stream' | 'mac-mismatch';

export type EventCursorVerification = TokenVerification<EventCursorClaim, EventCursorProblem>;

/** Mints the cursor of a position in an event stream (`eventStreamKey`), with the current key. */
export function encodeEventCursor(
  position: EventCursorPosition,
  stream: string,
  keyring: Keyring,
): string {
  const key = keyring.current;
  const body = new ByteWriter()
    .byte(EVENT_CURSOR_VERSION)
    .byte(key.id)
    .bytes(Buffer.from(logIdOf(position.logIdentity), 'hex'))
    .bytes(contextTag(key, STREAM_TAG_LABEL, stream, STREAM_TAG_BYTES))
    .varint(position.partition)
    .varint(position.offset)
    .toBuffer();
  return Buffer.concat([body, tokenMac(key, body, stream)]).toString('base64url');
}

/**
 * Parses and verifies a client's cursor for an event stream. Never throws: anything that is not
 * a cursor this deployment minted for this stream comes back as a problem with a reason.
 */
export function verifyEventCursor(
  raw: unknown,
  options: { readonly stream: string; readonly keyring: Keyring; readonly nowMs: number },
): EventCursorVerification {
  const opened = openToken(raw, {
    version: EVENT_CURSOR_VERSION,
    minBytes: 2 + LOG_ID_BYTES + STREAM_TAG_BYTES + 2 + MAC_BYTES,
    maxLength: MAX_CURSOR_LENGTH,
    keyring: options.keyring,
    nowMs: options.nowMs,
  });
  if (!opened.ok) return opened;
  const { bytes, key } = opened;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  const reader = new ByteReader(body);
  reader.bytes(2);
  const logId = reader.bytes(LOG_ID_BYTES)?.toString('hex');
  const tag = reader.bytes(STREAM_TAG_BYTES);
  const partition = reader.smallVarint(0x7fff_ffff);
  const offset = reader.varint();
  if (
    logId === undefined ||
    tag === undefined ||
    partition === undefined ||
    offset === undefined ||
    reader.remaining !== 0
  )
    return { ok: false, problem: 'malformed', detail: 'bad position' };
  if (!timingSafeEqual(tokenMac(key, body, options.stream), bytes.subarray(body.length))) {
    return timingSafeEqual(tag, contextTag(key, STREAM_TAG_LABEL, options.stream, STREAM_TAG_BYTES))
      ? { ok: false, problem: 'mac-mismatch', detail: 'the cursor was altered or not minted here' }
      : {
          ok: false,
          problem: 'other-stream',
          detail: 'the cursor belongs to another event stream',
        };
  }
  return { ok: true, claim: { partition, offset, logId } };
}
