import { hash } from 'node:crypto';
import { ByteWriter } from '../bytes.js';
import {
  EPOCH_BYTES,
  EVENT_ID_MAC_INFO,
  logIdOf,
  sessionTag,
  type StreamIdentity,
} from './event-id.js';
import type { Generation } from './generation.js';
import { derivedKey, MAC_BYTES, tokenMac } from '../keys/keyed-token.js';
import type { EventIdVersion, SigningKey } from '../keys/keyring.js';

/** Version 2's MAC key, in front of the body: 32 bytes (HKDF's output). */
const KEY_BYTES = 32;

/**
 * The one way the gateway mints event ids: bound once to a stream (its log, partition, session
 * and key), then called per event with where it is. It runs once per delivered event, so what
 * does not change per event is prepared once, at the stream's first event (a stream held open
 * without events costs only the closure): the header (log id, session tag, partition), the
 * stream's bytes, the session suffix; the MAC key once per key. An event then costs its varints,
 * one SHA3-256 pass over a scratch buffer shared by all minters (minting is synchronous), and the
 * base64url (version 1, when the keyring mints it: HMAC-SHA256 over the same body). The ids are
 * byte for byte those of `encodeEventId` (a test holds them equal).
 */
export function eventIdMinter(
  identity: StreamIdentity,
): (offset: bigint, generation: Generation | undefined, seq: number) => string {
  let fixed: MinterParts | undefined;
  return (offset, generation, seq) => {
    fixed ??= minterParts(identity);
    const { key, head, tail, suffix, epoch } = fixed;
    const { session } = identity;
    const needed = KEY_BYTES + head.length + MAX_VARIABLE_BYTES + tail.length + suffix.length;
    if (scratch.input.length < needed) scratch = { input: Buffer.alloc(needed), key: undefined };
    const { input } = scratch;
    if (scratch.key !== key) {
      derivedKey(key, EVENT_ID_MAC_INFO).copy(input);
      scratch.key = key;
    }
    // The MAC's input is the key, then the id's body, then the suffix; the id is read back from
    // the body's place with the MAC written over the suffix.
    const bodyStart = KEY_BYTES;
    let at = bodyStart + head.copy(input, bodyStart);
    at = writeVarint(input, at, offset);
    if (generation === undefined) input[at++] = 0;
    else {
      input[at++] = 1;
      if (generation.epoch !== fixed.epochFor) {
        fixed.epochFor = generation.epoch;
        epoch.write(generation.epoch, 'hex');
      }
      at += epoch.copy(input, at);
      at = writeVarint(input, at, generation.attempt);
    }
    at = writeVarint(input, at, seq);
    at += tail.copy(input, at);
    const bodyEnd = at;
    at += suffix.copy(input, at);
    if (fixed.version === 2)
      hash('sha3-256', input.subarray(0, at), 'buffer').copy(input, bodyEnd, 0, MAC_BYTES);
    else tokenMac(key, input.subarray(bodyStart, bodyEnd), session).copy(input, bodyEnd);
    return input.toString('base64url', bodyStart, bodyEnd + MAC_BYTES);
  };
}

/** What a minter prepares at its stream's first event. */
interface MinterParts {
  readonly key: SigningKey;
  readonly version: EventIdVersion;
  /** Version, key id, log id, session tag, partition. */
  readonly head: Buffer;
  /** The stream id's length and bytes. */
  readonly tail: Buffer;
  /** What the MAC covers after the body: NUL and the session id. */
  readonly suffix: Buffer;
  /** The bytes of the generation epoch last minted (`epochFor`). */
  readonly epoch: Buffer;
  epochFor: string | undefined;
}

function minterParts(identity: StreamIdentity): MinterParts {
  const { logIdentity, partition, stream, session, keyring } = identity;
  const key = keyring.current;
  const head = new ByteWriter()
    .byte(keyring.mints)
    .byte(key.id)
    .bytes(Buffer.from(logIdOf(logIdentity), 'hex'))
    .bytes(sessionTag(key, session))
    .varint(partition)
    .toBuffer();
  const streamBytes = Buffer.from(stream, 'utf8');
  return {
    key,
    version: keyring.mints,
    head,
    tail: Buffer.concat([Buffer.from([streamBytes.length]), streamBytes]),
    suffix: Buffer.from(`\u0000${session}`, 'utf8'),
    epoch: Buffer.alloc(EPOCH_BYTES),
    epochFor: undefined,
  };
}

/** Offset and seq varints (10 and 5 bytes at most) and a generation (flag, epoch, attempt). */
const MAX_VARIABLE_BYTES = 10 + 5 + 1 + EPOCH_BYTES + 5;

/** The minters' scratch space (grown when a longer input comes), with `key`'s MAC key in front. */
let scratch: { input: Buffer; key: SigningKey | undefined } = {
  input: Buffer.alloc(512),
  key: undefined,
};

/** Writes `value` (a non-negative integer) as an unsigned LEB128 varint at `at`; returns the end. */
function writeVarint(into: Buffer, at: number, value: bigint | number): number {
  if (typeof value === 'number' || value <= BigInt(Number.MAX_SAFE_INTEGER)) {
    let rest = Number(value);
    while (rest >= 0x80) {
      into[at++] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    into[at++] = rest;
    return at;
  }
  let rest = value;
  while (rest >= 0x80n) {
    into[at++] = Number(rest & 0x7fn) | 0x80;
    rest >>= 7n;
  }
  into[at++] = Number(rest);
  return at;
}
