import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createKeyring,
  encodeEventId,
  EVENT_ID_VERSION,
  eventIdMinter,
  logIdOf,
  MAX_EVENT_ID_LENGTH,
  newSessionId,
  requestStreamId,
  verifyEventId,
  type SessionId,
  type WorkerEpoch,
} from '../src/index.js';
import { MAC_BYTES, tokenMac } from '../src/keys/keyed-token.js';
import { epochA, gen, idFor, keyring, log, otherSession, session, stream } from './helpers.js';

const now = 1_000_000;
const verify = (raw: unknown, sessionId: SessionId = session, ring = keyring) =>
  verifyEventId(raw, { session: sessionId, keyring: ring, nowMs: now });

describe('event ids', () => {
  it('round-trips a position with a generation', () => {
    const id = idFor({
      offset: 123_456_789_012n,
      partition: 0,
      generation: gen(epochA, 3),
      seq: 47,
    });
    expect(verify(id)).toEqual({
      ok: true,
      claim: {
        partition: 0,
        offset: 123_456_789_012n,
        generation: gen(epochA, 3),
        seq: 47,
        stream,
        logId: logIdOf(log),
      },
    });
  });

  it('round-trips a priming position (no generation, seq 0)', () => {
    const result = verify(idFor({ offset: 5n }));
    expect(result.ok && result.claim.generation).toBe(undefined);
    expect(result.ok && result.claim.seq).toBe(0);
  });

  it('stays well under 200 characters and header-safe, even for the longest stream ids', () => {
    const longStream = requestStreamId('x'.repeat(1000));
    const inlineStream = requestStreamId('r'.repeat(47));
    for (const s of [longStream, inlineStream]) {
      const id = encodeEventId(
        {
          logIdentity: log,
          partition: 2 ** 31 - 1,
          offset: 2n ** 62n,
          generation: gen(epochA, 2 ** 32 - 1),
          seq: 2 ** 31 - 1,
          stream: s,
        },
        session,
        keyring,
      );
      expect(id.length).toBeLessThan(160);
      expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(verify(id).ok).toBe(true);
    }
  });

  it('refuses an id of another session as other-session, and an altered one as mac-mismatch', () => {
    const id = idFor({ offset: 9n, generation: gen(epochA, 1), seq: 2 });
    expect(verify(id, otherSession)).toMatchObject({ ok: false, problem: 'other-session' });
    const bytes = Buffer.from(id, 'base64url');
    bytes[bytes.length - 20] = (bytes[bytes.length - 20] as number) ^ 0x01; // inside the stream bytes or seq
    const altered = bytes.toString('base64url');
    const result = verify(altered);
    expect(result.ok).toBe(false);
    expect(['mac-mismatch', 'malformed']).toContain(!result.ok && result.problem);
  });

  it('verifies ids minted before a key rotation during the grace period only', () => {
    const oldKey = { id: 1, secret: new Uint8Array(32).fill(7) };
    const newKey = { id: 2, secret: new Uint8Array(32).fill(9) };
    const before = idFor({ offset: 1n, generation: gen(epochA, 1), seq: 1 });
    const rotated = createKeyring({
      current: newKey,
      previous: [{ ...oldKey, verifyUntilMs: now + 10 }],
    });
    expect(verify(before, session, rotated).ok).toBe(true);
    expect(verifyEventId(before, { session, keyring: rotated, nowMs: now + 11 })).toMatchObject({
      ok: false,
      problem: 'unknown-key',
    });
    const dropped = createKeyring({ current: newKey });
    expect(verify(before, session, dropped)).toMatchObject({ ok: false, problem: 'unknown-key' });
    // New ids are signed with the new key and verify with it.
    const after = encodeEventId(
      { logIdentity: log, partition: 0, offset: 1n, generation: undefined, seq: 0, stream },
      session,
      rotated,
    );
    expect(verify(after, session, dropped).ok).toBe(true);
  });

  it('validates keyring options up front', () => {
    expect(() => createKeyring({ current: { id: 1, secret: new Uint8Array(8) } })).toThrow(
      /at least 32 bytes/,
    );
    expect(() => createKeyring({ current: { id: 300, secret: new Uint8Array(32) } })).toThrow(
      /0\.\.255/,
    );
    const key = { id: 1, secret: new Uint8Array(32) };
    expect(() => createKeyring({ current: key, previous: [key] })).toThrow(/unique key ids/);
  });

  it('refuses an unknown format version', () => {
    const bytes = Buffer.from(idFor({ offset: 1n }), 'base64url');
    bytes[0] = 3;
    expect(verify(bytes.toString('base64url'))).toMatchObject({
      ok: false,
      problem: 'unsupported-version',
    });
  });

  it('mints version 2 (a one-pass SHA3 MAC) and still verifies version 1 (HMAC), without downgrade', () => {
    const id = idFor({ offset: 9n, generation: gen(epochA, 2), seq: 4 });
    const v2 = Buffer.from(id, 'base64url');
    expect(v2[0]).toBe(EVENT_ID_VERSION);
    expect(EVENT_ID_VERSION).toBe(2);
    // The same position as version 1 minted it before an upgrade: HMAC-SHA256 over the body.
    const body = Buffer.from(v2.subarray(0, v2.length - MAC_BYTES));
    body[0] = 1;
    const v1 = Buffer.concat([body, tokenMac(keyring.current, body, session)]);
    const claim = verify(id);
    expect(claim.ok).toBe(true);
    expect(verify(v1.toString('base64url'))).toEqual(claim);
    // Another session's v1 id is told apart, as a v2 one is.
    expect(verify(v1.toString('base64url'), otherSession)).toMatchObject({
      ok: false,
      problem: 'other-session',
    });
    // A v2 MAC under a v1 label (or the reverse) verifies as neither.
    const relabelled = Buffer.from(v2);
    relabelled[0] = 1;
    expect(verify(relabelled.toString('base64url'))).toMatchObject({ problem: 'mac-mismatch' });
    const upgraded = Buffer.from(v1);
    upgraded[0] = 2;
    expect(verify(upgraded.toString('base64url'))).toMatchObject({ problem: 'mac-mismatch' });
    // A keyring told to mint version 1 (a rolling upgrade from 0.1.0) writes exactly that id.
    const position = {
      logIdentity: log,
      partition: 0,
      offset: 9n,
      generation: gen(epochA, 2),
      seq: 4,
      stream,
    };
    const ring1 = createKeyring({ current: keyring.current, mints: 1 });
    expect(encodeEventId(position, session, ring1)).toBe(v1.toString('base64url'));
    expect(() => createKeyring({ current: keyring.current, mints: 3 as 1 })).toThrow(/1 or 2/);
  });

  it('the stream minter writes exactly the ids encodeEventId writes, for any position and key', () => {
    const epoch = fc.stringMatching(/^[0-9a-f]{20}$/) as fc.Arbitrary<WorkerEpoch>;
    fc.assert(
      fc.property(
        fc.record({
          secret: fc.uint8Array({ minLength: 32, maxLength: 100 }),
          keyId: fc.integer({ min: 0, max: 255 }),
          mints: fc.constantFrom(1 as const, 2 as const),
          partition: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          stream: fc.constantFrom(stream, requestStreamId('r'.repeat(47)), requestStreamId('é')),
          events: fc.array(
            fc.record({
              offset: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
              generation: fc.option(
                fc.record({ epoch, attempt: fc.integer({ min: 1, max: 2 ** 32 - 1 }) }),
                {
                  nil: undefined,
                },
              ),
              seq: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
            }),
            { minLength: 1, maxLength: 5 },
          ),
        }),
        ({ secret, keyId, mints, partition, stream: s, events }) => {
          const ring = createKeyring({ current: { id: keyId, secret }, mints });
          const mint = eventIdMinter({
            logIdentity: log,
            partition,
            stream: s,
            session,
            keyring: ring,
          });
          for (const { offset, generation, seq } of events) {
            const id = mint(offset, generation, seq);
            const position = { logIdentity: log, partition, offset, generation, seq, stream: s };
            expect(id).toBe(encodeEventId(position, session, ring));
            expect(Buffer.from(id, 'base64url')[0]).toBe(mints);
            // A priming position (no generation) is valid only with seq 0.
            expect(verify(id, session, ring).ok).toBe(generation !== undefined || seq === 0);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('session ids carry 128 random bits', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newSessionId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(Buffer.from(id, 'base64url')).toHaveLength(16);
  });
});

describe('event id parser under fuzzing: never throws, always a refusal with a reason', () => {
  const refusal = (raw: unknown) => {
    const result = verify(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.detail.length).toBeGreaterThan(0);
  };

  it('random strings, unicode and huge headers', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'grapheme' }),
          fc.base64String(),
          fc.string({ minLength: 300, maxLength: 5000 }),
        ),
        refusal,
      ),
      { numRuns: 2000 },
    );
    refusal(undefined);
    refusal(42);
    refusal('');
    refusal('x'.repeat(MAX_EVENT_ID_LENGTH + 1));
  });

  it('random byte strings in base64url', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 200 }), (bytes) =>
        refusal(Buffer.from(bytes).toString('base64url')),
      ),
      { numRuns: 3000 },
    );
  });

  it('every single-byte mutation, truncation and extension of a valid id', () => {
    const id = idFor({ offset: 77n, generation: gen(epochA, 2), seq: 5 });
    const bytes = Buffer.from(id, 'base64url');
    fc.assert(
      fc.property(fc.nat(bytes.length - 1), fc.integer({ min: 1, max: 255 }), (index, flip) => {
        const mutated = Buffer.from(bytes);
        mutated[index] = (mutated[index] as number) ^ flip;
        refusal(mutated.toString('base64url'));
      }),
      { numRuns: 3000 },
    );
    for (let length = 0; length < bytes.length; length++)
      refusal(bytes.subarray(0, length).toString('base64url'));
    refusal(Buffer.concat([bytes, Buffer.from([0])]).toString('base64url'));
    refusal(`${id}=`);
  });
});
