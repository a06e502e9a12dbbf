import { describe, expect, it } from 'vitest';
import { createKeyring, httpUrlOption, mintSignalToken, verifySignalToken } from '../src/index.js';

const key = (id: number, fill: number) => ({ id, secret: new Uint8Array(32).fill(fill) });
const keyring = createKeyring({ current: key(1, 7) });
const claim = { owner: 'session-1', journal: 'r:abc', name: 'approval', expiresAtMs: 10_000 };

describe('signal tokens', () => {
  it('open to their claim, and hide it', () => {
    const token = mintSignalToken(keyring, claim);
    expect(verifySignalToken(keyring, token, 9_999)).toEqual({ ok: true, claim });
    expect(Buffer.from(token, 'base64url').toString('latin1')).not.toContain('session-1');
    const forever = mintSignalToken(keyring, { ...claim, expiresAtMs: undefined });
    expect(verifySignalToken(keyring, forever, Number.MAX_SAFE_INTEGER)).toMatchObject({
      ok: true,
      claim: { name: 'approval' },
    });
    expect(mintSignalToken(keyring, claim)).not.toBe(token);
  });

  it('refuse expired, changed, foreign and malformed tokens', () => {
    const token = mintSignalToken(keyring, claim);
    expect(verifySignalToken(keyring, token, 10_001)).toEqual({ ok: false, problem: 'expired' });
    const bytes = Buffer.from(token, 'base64url');
    bytes[20] = (bytes[20] as number) ^ 1;
    expect(verifySignalToken(keyring, bytes.toString('base64url'), 0)).toEqual({
      ok: false,
      problem: 'mismatch',
    });
    const other = createKeyring({ current: key(1, 8) });
    expect(verifySignalToken(other, token, 0)).toEqual({ ok: false, problem: 'mismatch' });
    const rotated = createKeyring({ current: key(2, 8) });
    expect(verifySignalToken(rotated, token, 0)).toEqual({ ok: false, problem: 'unknown-key' });
    const both = createKeyring({ current: key(2, 8), previous: [key(1, 7)] });
    expect(verifySignalToken(both, token, 0).ok).toBe(true);
    for (const bad of ['', 'a', '!!!', 'x'.repeat(2000), 42, undefined])
      expect(verifySignalToken(keyring, bad, 0)).toEqual({ ok: false, problem: 'malformed' });
  });

  it('take their URL from an http(s) public URL, its trailing slashes dropped', () => {
    expect(httpUrlOption('publicUrl', 'https://mcp.example.com/mcp/')).toBe(
      'https://mcp.example.com/mcp',
    );
    for (const bad of ['ftp://x/mcp', 'https://x/mcp?a=1', 'https://x/mcp#f', 'not a url', 7])
      expect(() => httpUrlOption('publicUrl', bad)).toThrow(/publicUrl: expected an http\(s\) URL/);
  });
});
