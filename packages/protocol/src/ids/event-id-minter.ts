import { hash } from 'node:crypto';
import { ByteWriter } from '../bytes.js';
import {
  EPOCH_BYTES,
  EVENT_ID_VERSION,
  logIdOf,
  sessionTag,
  type SigningKey,
  type StreamIdentity,
} from './event-id.js';
import type { Generation } from './generation.js';
import { MAC_BYTES } from './keyed-token.js';

/** SHA-256's block size: HMAC's key pads are one block. */
const BLOCK = 64;

/**
 * The one way the gateway mints event ids: bound once to a stream (its log, partition, session
 * and key), then called per event with where it is. It runs once per delivered event, so what
 * does not change per event is prepared once, at the stream's first event (a stream held open
 * without events costs only the closure): the header (log id, session tag, partition), the
 * stream's bytes, the session suffix; HMAC's padded key blocks once per key. An event then costs
 * its varints, two one-shot SHA-256 passes over scratch buffers shared by all minters (minting is
 * synchronous), and the base64url. The ids are byte for byte those of `encodeEventId` (a test holds
 * them equal); `verifyEventId` checks them with the standard HMAC.
 */
export function eventIdMinter(
  identity: StreamIdentity,
): (offset: bigint, generation: Generation | undefined, seq: number) => string {
  let fixed: MinterParts | undefined;
  return (offset, generation, seq) => {
    fixed ??= minterParts(identity);
    const { key, head, tail, suffix, epoch } = fixed;
    const needed = BLOCK + head.length + MAX_VARIABLE_BYTES + tail.length + suffix.length;
    if (scratch.inner.length < needed)
      scratch = { ...scratch, inner: Buffer.alloc(needed), key: undefined };
    const { inner, outer } = scratch;
    if (scratch.key !== key) {
      const pads = hmacPads(key);
      pads.inner.copy(inner);
      pads.outer.copy(outer);
      scratch.key = key;
    }
    // HMAC's inner input is the pad, then the id's body, then the suffix; the id is read back
    // from the body's place with the MAC written over the suffix.
    const bodyStart = BLOCK;
    let at = bodyStart + head.copy(inner, bodyStart);
    at = writeVarint(inner, at, offset);
    if (generation === undefined) inner[at++] = 0;
    else {
      inner[at++] = 1;
      if (generation.epoch !== fixed.epochFor) {
        fixed.epochFor = generation.epoch;
        epoch.write(generation.epoch, 'hex');
      }
      at += epoch.copy(inner, at);
      at = writeVarint(inner, at, generation.attempt);
    }
    at = writeVarint(inner, at, seq);
    at += tail.copy(inner, at);
    const bodyEnd = at;
    at += suffix.copy(inner, at);
    hash('sha256', inner.subarray(0, at), 'buffer').copy(outer, BLOCK);
    hash('sha256', outer, 'buffer').copy(inner, bodyEnd, 0, MAC_BYTES);
    return inner.toString('base64url', bodyStart, bodyEnd + MAC_BYTES);
  };
}

/** What a minter prepares at its stream's first event. */
interface MinterParts {
  readonly key: SigningKey;
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
    .byte(EVENT_ID_VERSION)
    .byte(key.id)
    .bytes(Buffer.from(logIdOf(logIdentity), 'hex'))
    .bytes(sessionTag(key, session))
    .varint(partition)
    .toBuffer();
  const streamBytes = Buffer.from(stream, 'utf8');
  return {
    key,
    head,
    tail: Buffer.concat([Buffer.from([streamBytes.length]), streamBytes]),
    suffix: Buffer.from(`\u0000${session}`, 'utf8'),
    epoch: Buffer.alloc(EPOCH_BYTES),
    epochFor: undefined,
  };
}

/** Offset and seq varints (10 and 5 bytes at most) and a generation (flag, epoch, attempt). */
const MAX_VARIABLE_BYTES = 10 + 5 + 1 + EPOCH_BYTES + 5;

/**
 * The minters' scratch space: HMAC's inner input (grown when a longer one comes) and its outer
 * input, with the pads of `key` in place.
 */
let scratch: { inner: Buffer; outer: Buffer; key: SigningKey | undefined } = {
  inner: Buffer.alloc(512),
  outer: Buffer.alloc(BLOCK + 32),
  key: undefined,
};

/** HMAC-SHA256's inner and outer padded keys (RFC 2104). */
function hmacPads(key: SigningKey): { inner: Buffer; outer: Buffer } {
  const block = Buffer.alloc(BLOCK);
  if (key.secret.length > BLOCK) hash('sha256', key.secret, 'buffer').copy(block);
  else block.set(key.secret);
  return {
    inner: Buffer.from(block.map((b) => b ^ 0x36)),
    outer: Buffer.from(block.map((b) => b ^ 0x5c)),
  };
}

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
