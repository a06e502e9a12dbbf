import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { ByteReader, ByteWriter } from '../bytes.js';
import { isValidAttempt, type Generation } from './generation.js';
import { parseStreamId, parseWorkerEpoch, type PartitionKey, type StreamId } from './ids.js';
import {
  contextTag,
  derivedKey,
  MAC_BYTES,
  openToken,
  tokenMac,
  type TokenProblem,
  type TokenVerification,
} from '../keys/keyed-token.js';
import { EVENT_ID_VERSION, type Keyring, type SigningKey } from '../keys/keyring.js';

/**
 * The opaque `id:` of every SSE event and the client's `Last-Event-ID`.
 *
 * Binary layout, base64url without padding:
 *   version u8 | key id u8 | log id 8B | session tag 4B | partition varint | offset varint |
 *   flags u8 (bit 0: has generation) | [epoch 10B | attempt varint] | seq varint |
 *   stream length u8 | stream bytes | MAC 16B
 * The MAC covers everything before it plus the session id, truncated to 128 bits:
 *   version 2 (minted): SHA3-256 over a 32-byte key derived from the secret, then the body, NUL
 *     and the session id — one pass of a sponge, which has no length extension, so a fixed-length
 *     key in front is a MAC (the construction KMAC builds on); half the cost of HMAC's two passes
 *     on the path that mints an id per delivered event;
 *   version 1 (still verified, so ids minted before an upgrade resume): HMAC-SHA256.
 * The session tag (a keyed hash of the session id) lets a mismatch be reported as "another
 * session's id" rather than "tampered"; the MAC alone decides validity. The version minted is the
 * keyring's (`EVENT_ID_VERSION` by default).
 */
/** The format minted before version 2, still accepted. */
const EVENT_ID_V1 = 1;

const LOG_ID_BYTES = 8;
const SESSION_TAG_BYTES = 4;
export const EPOCH_BYTES = 10;
/** Far above any real id (~90 characters); a bound keeps hostile headers cheap to refuse. */
export const MAX_EVENT_ID_LENGTH = 256;

/** Where a stream's events live: the Kafka cluster id and the events topic's id (or the embedded log's). */
export interface LogIdentity {
  readonly clusterId: string;
  readonly topicId: string;
}

/** What an event id claims: a position in one log, in one generation of one stream. */
export interface EventPosition {
  readonly logIdentity: LogIdentity;
  readonly partition: number;
  /**
   * The event's offset in the partition. For a priming position (no generation, seq 0) the offset
   * the stream's first record will be at or after.
   */
  readonly offset: bigint;
  /** Undefined only for a priming position, sent before the stream had any event. */
  readonly generation: Generation | undefined;
  readonly seq: number;
  readonly stream: StreamId;
}

/** A verified claim: the position, and the log id it names (compared with the current log's). */
export interface EventClaim {
  readonly partition: number;
  readonly offset: bigint;
  readonly generation: Generation | undefined;
  readonly seq: number;
  readonly stream: StreamId;
  readonly logId: string;
}

/** The 8-byte log id carried in event ids (hex), from the cluster id and topic id. */
export function logIdOf(log: LogIdentity): string {
  return createHash('sha256')
    .update(`${log.clusterId}\u0000${log.topicId}`)
    .digest()
    .subarray(0, LOG_ID_BYTES)
    .toString('hex');
}

/** Mints the event id for a position in a session's stream, signed with the keyring's current key. */
export function encodeEventId(
  position: EventPosition,
  session: PartitionKey,
  keyring: Keyring,
): string {
  const key = keyring.current;
  const stream = Buffer.from(position.stream, 'utf8');
  const writer = new ByteWriter()
    .byte(keyring.mints)
    .byte(key.id)
    .bytes(Buffer.from(logIdOf(position.logIdentity), 'hex'))
    .bytes(sessionTag(key, session))
    .varint(position.partition)
    .varint(position.offset)
    .byte(position.generation === undefined ? 0 : 1);
  if (position.generation !== undefined) {
    writer.bytes(Buffer.from(position.generation.epoch, 'hex')).varint(position.generation.attempt);
  }
  writer.varint(position.seq).byte(stream.length).bytes(stream);
  const body = writer.toBuffer();
  const sum =
    keyring.mints === EVENT_ID_V1 ? tokenMac(key, body, session) : mac(key, body, session);
  return Buffer.concat([body, sum]).toString('base64url');
}

/** The fixed parts of one stream's event ids. */
export interface StreamIdentity {
  readonly logIdentity: LogIdentity;
  readonly partition: number;
  readonly stream: StreamId;
  readonly session: PartitionKey;
  readonly keyring: Keyring;
}

/** Why an event id was refused. */
export type EventIdProblem = TokenProblem | 'other-session' | 'mac-mismatch';

export type EventIdVerification = TokenVerification<EventClaim, EventIdProblem>;

export interface VerifyOptions {
  session: PartitionKey;
  keyring: Keyring;
  /** Now, in ms since epoch: keys past `verifyUntilMs` are refused. */
  nowMs: number;
}

/**
 * Parses and verifies a `Last-Event-ID` for the requesting session. Never throws: anything that
 * is not an id this deployment minted for this session comes back as a problem with a reason.
 */
export function verifyEventId(raw: unknown, options: VerifyOptions): EventIdVerification {
  const envelope = openToken(raw, {
    version: EVENT_ID_VERSION,
    alsoAccepts: EVENT_ID_V1,
    minBytes: 2 + LOG_ID_BYTES + SESSION_TAG_BYTES + MAC_BYTES,
    maxLength: MAX_EVENT_ID_LENGTH,
    keyring: options.keyring,
    nowMs: options.nowMs,
  });
  if (!envelope.ok) return envelope;
  const { bytes, key } = envelope;
  const body = bytes.subarray(0, bytes.length - MAC_BYTES);
  const position = readPosition(body);
  if (!position.ok) return position;
  const expected =
    bytes[0] === EVENT_ID_V1
      ? tokenMac(key, body, options.session)
      : mac(key, body, options.session);
  const actual = bytes.subarray(bytes.length - MAC_BYTES);
  if (!timingSafeEqual(expected, actual)) {
    return timingSafeEqual(position.tag, sessionTag(key, options.session))
      ? refuse('mac-mismatch', 'the id was altered or not minted by this deployment')
      : refuse('other-session', 'the id belongs to another session');
  }
  return { ok: true, claim: position.claim };
}

type Step<T> =
  | ({ readonly ok: true } & T)
  | { readonly ok: false; readonly problem: EventIdProblem; readonly detail: string };

/** The position an id's body names (its MAC not yet checked). */
function readPosition(body: Buffer): Step<{ claim: EventClaim; tag: Buffer }> {
  const reader = new ByteReader(body);
  reader.bytes(2);
  const logId = reader.bytes(LOG_ID_BYTES)?.toString('hex');
  const tag = reader.bytes(SESSION_TAG_BYTES);
  const partition = reader.smallVarint(0x7fff_ffff);
  const offset = reader.varint();
  const flags = reader.byte();
  if (
    logId === undefined ||
    tag === undefined ||
    partition === undefined ||
    offset === undefined ||
    flags === undefined
  ) {
    return refuse('malformed', 'truncated header');
  }
  if (flags > 1) return refuse('malformed', 'unknown flags');
  const generation = flags === 1 ? readGeneration(reader) : undefined;
  if (generation === null) return refuse('malformed', 'bad generation');
  const seq = reader.smallVarint(0x7fff_ffff);
  const streamLength = reader.byte();
  const streamBytes = streamLength === undefined ? undefined : reader.bytes(streamLength);
  if (seq === undefined || streamBytes === undefined || reader.remaining !== 0) {
    return refuse('malformed', 'bad seq or stream');
  }
  if (generation === undefined && seq !== 0)
    return refuse('malformed', 'a priming position has seq 0');
  const stream = parseStreamId(new TextDecoder('utf-8', { fatal: false }).decode(streamBytes));
  if (stream === undefined || Buffer.byteLength(stream) !== streamBytes.length) {
    return refuse('malformed', 'bad stream id');
  }
  return { ok: true, tag, claim: { partition, offset, generation, seq, stream, logId } };
}

/** A generation (epoch and attempt) from the reader; null when it is not a valid one. */
function readGeneration(reader: ByteReader): Generation | null {
  const epoch = parseWorkerEpoch(reader.bytes(EPOCH_BYTES)?.toString('hex') ?? '');
  const attempt = reader.smallVarint(0xffff_ffff);
  if (epoch === undefined || attempt === undefined || !isValidAttempt(attempt)) return null;
  return { epoch, attempt };
}

function refuse(
  problem: EventIdProblem,
  detail: string,
): { readonly ok: false; readonly problem: EventIdProblem; readonly detail: string } {
  return { ok: false, problem, detail };
}

/** What version 2's MAC key is derived for (HKDF `info`). */
export const EVENT_ID_MAC_INFO = 'tidemark event-id mac v2';

/** Version 2's MAC: SHA3-256 of the derived key (32 bytes), the body, NUL, the session id. */
function mac(key: SigningKey, body: Buffer, session: PartitionKey): Buffer {
  const prefix = derivedKey(key, EVENT_ID_MAC_INFO);
  const input = Buffer.concat([prefix, body, Buffer.from(`\u0000${session}`, 'utf8')]);
  return hash('sha3-256', input, 'buffer').subarray(0, MAC_BYTES);
}

export function sessionTag(key: SigningKey, session: PartitionKey): Buffer {
  return contextTag(key, 'session-tag', session, SESSION_TAG_BYTES);
}
