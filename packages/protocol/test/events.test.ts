import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  createKeyring,
  encodeEventCursor,
  eventStreamKey,
  logIdOf,
  openSecret,
  sealSecret,
  subscriptionIdOf,
  verifyEventCursor,
} from '../src/index.js';
import { keyring, log } from './helpers.js';

// The Events extension's pure parts (#35): which stream an occurrence belongs to, a webhook
// subscription's id, and the cursor a client holds — refused when forged, moved or foreign.

const ticks = eventStreamKey('ticks', { everyMs: 1_000 });
const nowMs = Date.parse('2026-12-02T00:00:00Z');

describe('event streams', () => {
  it('one stream per event name and arguments, whatever the key order', () => {
    expect(canonicalJson({ b: [2, { d: 1, c: null }], a: 'x' })).toBe(
      '{"a":"x","b":[2,{"c":null,"d":1}]}',
    );
    expect(eventStreamKey('ticks', { a: 1, b: 2 })).toBe(eventStreamKey('ticks', { b: 2, a: 1 }));
    expect(eventStreamKey('ticks', {})).toBe(eventStreamKey('ticks', undefined));
    expect(eventStreamKey('ticks', { a: 1 })).not.toBe(eventStreamKey('ticks', { a: 2 }));
    expect(eventStreamKey('ticks', { a: 1 })).not.toBe(eventStreamKey('tocks', { a: 1 }));
    expect(ticks).toMatch(/^ev\.[A-Za-z0-9_-]{22}$/);
  });

  it('refuses arguments that are not JSON, naming what is wrong', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/non-finite number/);
    expect(() => canonicalJson({ when: new Date(0) })).toThrow(/not plain JSON/);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(/a function/);
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(() => canonicalJson(deep)).toThrow(/nested deeper than 32/);
  });

  it('a subscription is the same for the same principal, callback, event and arguments only', () => {
    const alice = {
      principal: 'alice',
      url: 'https://hooks.example/mcp?k=1',
      name: 'ticks',
      arguments: { everyMs: 1 },
    };
    const id = subscriptionIdOf(alice);
    expect(id).toMatch(/^sub_[A-Za-z0-9_-]{22}$/);
    expect(subscriptionIdOf({ ...alice, arguments: { everyMs: 1 } })).toBe(id);
    for (const other of [
      { ...alice, principal: 'bob' },
      { ...alice, url: 'https://hooks.example/mcp?k=2' },
      { ...alice, name: 'tocks' },
      { ...alice, arguments: { everyMs: 2 } },
    ])
      expect(subscriptionIdOf(other)).not.toBe(id);
  });
});

describe('event cursors', () => {
  const cursor = encodeEventCursor({ logIdentity: log, partition: 3, offset: 41n }, ticks, keyring);

  it('round-trips a position for its stream, and names the log it belongs to', () => {
    expect(cursor.length).toBeLessThan(64);
    expect(verifyEventCursor(cursor, { stream: ticks, keyring, nowMs })).toEqual({
      ok: true,
      claim: { partition: 3, offset: 41n, logId: logIdOf(log) },
    });
  });

  it('refuses another stream’s cursor as such, and a moved or forged one as altered', () => {
    const other = eventStreamKey('ticks', { everyMs: 5 });
    expect(verifyEventCursor(cursor, { stream: other, keyring, nowMs })).toMatchObject({
      ok: false,
      problem: 'other-stream',
    });
    const bytes = Buffer.from(cursor, 'base64url');
    const at = bytes.length - 17; // the offset, moved by one
    bytes.writeUInt8(bytes.readUInt8(at) ^ 1, at);
    expect(
      verifyEventCursor(bytes.toString('base64url'), { stream: ticks, keyring, nowMs }),
    ).toMatchObject({ ok: false, problem: 'mac-mismatch' });
  });

  it('refuses what this deployment did not mint: another key, a retired one, junk', () => {
    const elsewhere = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(9) } });
    expect(verifyEventCursor(cursor, { stream: ticks, keyring: elsewhere, nowMs })).toMatchObject({
      ok: false,
    });
    const rotated = createKeyring({
      current: { id: 2, secret: new Uint8Array(32).fill(8) },
      previous: [{ ...keyring.current, verifyUntilMs: nowMs - 1 }],
    });
    expect(verifyEventCursor(cursor, { stream: ticks, keyring: rotated, nowMs })).toMatchObject({
      ok: false,
      problem: 'unknown-key',
    });
    for (const junk of [undefined, 7, '', 'not base64!', 'A'.repeat(200), 'AAAA'])
      expect(verifyEventCursor(junk, { stream: ticks, keyring, nowMs }).ok).toBe(false);
  });
});

describe('webhook signing secrets at rest', () => {
  const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

  it('are sealed, never in the clear, and open for their own subscription only', () => {
    const sealed = sealSecret(keyring, secret, 'sub_a');
    expect(sealed).toMatch(/^s1\.1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(sealSecret(keyring, secret, 'sub_a')).not.toBe(sealed); // a fresh IV every time
    expect(openSecret(keyring, sealed, 'sub_a')).toEqual({ ok: true, secret });
    expect(openSecret(keyring, sealed, 'sub_b')).toEqual({ ok: false, problem: 'mismatch' });
  });

  it('refuse a changed value, junk, and a key the keyring no longer holds', () => {
    const sealed = sealSecret(keyring, secret, 'sub_a');
    const flipped = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'AB' : 'AA'}`;
    expect(openSecret(keyring, flipped, 'sub_a')).toEqual({ ok: false, problem: 'mismatch' });
    for (const junk of ['', 's1', 's2.1.AAAA', 's1.x.AAAA', 's1.1.AA'])
      expect(openSecret(keyring, junk, 'sub_a')).toEqual({ ok: false, problem: 'malformed' });
    const rotated = createKeyring({ current: { id: 2, secret: new Uint8Array(32).fill(8) } });
    expect(openSecret(rotated, sealed, 'sub_a')).toEqual({ ok: false, problem: 'unknown-key' });
  });
});
