import { describe, expect, it } from 'vitest';
import { addressClass, parseCallbackUrl, resolveCallback } from '../src/index.js';

// SSRF defence for webhook callbacks (#35): https only, no credentials or fragment, and no
// delivery to an address inside the deployment — checked on the literal and after resolution.

describe('callback URLs', () => {
  it('takes an https URL exactly as given, its query kept', () => {
    const url = parseCallbackUrl('https://hooks.example.com/mcp?mcp_event_subscription=k1');
    expect(url.href).toBe('https://hooks.example.com/mcp?mcp_event_subscription=k1');
  });

  it('refuses what is not https, carries credentials or a fragment, or is not a URL', () => {
    for (const [raw, reason] of [
      ['http://hooks.example.com/mcp', /must use https, not http/],
      ['ftp://hooks.example.com/mcp', /must use https, not ftp/],
      ['https://user:pw@hooks.example.com/mcp', /must not carry credentials/],
      ['https://hooks.example.com/mcp#frag', /must not have a fragment/],
      ['not a url', /is not a URL/],
      ['', /must be a string of 1..2048 characters/],
      [`https://hooks.example.com/${'a'.repeat(2100)}`, /must be a string of 1..2048/],
    ] as const)
      expect(() => parseCallbackUrl(raw), raw).toThrow(reason);
    expect(() => parseCallbackUrl(42)).toThrow(
      expect.objectContaining({ code: 'TIDEMARK_WEBHOOK_REFUSED' }),
    );
  });

  it('refuses IP literals inside the deployment: private, link-local, metadata, loopback, mapped', () => {
    for (const host of [
      '10.0.0.7',
      '172.16.3.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '127.0.0.1',
      '[::1]',
      '[fe80::1]',
      '[fd00::1]',
      '[::ffff:10.0.0.1]',
      '[::ffff:127.0.0.1]',
      // IPv4-compatible (::/96): the IPv4 address inside, on a stack that still routes them.
      '[::10.0.0.1]',
      '[::a9fe:a9fe]',
    ])
      expect(() => parseCallbackUrl(`https://${host}/hook`), host).toThrow(
        /names a (loopback|private, link-local or otherwise non-public) address/,
      );
    expect(parseCallbackUrl('https://93.184.215.14/hook').hostname).toBe('93.184.215.14');
    expect(parseCallbackUrl('https://[2606:4700::1111]/hook').hostname).toBe('[2606:4700::1111]');
  });

  it('admits http to loopback only when development allows it', () => {
    expect(() => parseCallbackUrl('http://127.0.0.1:9/hook')).toThrow(/must use https/);
    const policy = { allowLoopback: true };
    expect(parseCallbackUrl('http://127.0.0.1:9/hook', policy).port).toBe('9');
    expect(parseCallbackUrl('http://localhost:9/hook', policy).hostname).toBe('localhost');
    expect(parseCallbackUrl('http://[::1]:9/hook', policy).hostname).toBe('[::1]');
    expect(() => parseCallbackUrl('http://10.0.0.7/hook', policy)).toThrow(/must use https/);
  });

  it('classifies addresses as deliveries need them', () => {
    expect(addressClass('8.8.8.8')).toBe('public');
    expect(addressClass('127.0.0.53')).toBe('loopback');
    expect(addressClass('::ffff:127.0.0.1')).toBe('loopback');
    expect(addressClass('192.168.0.1')).toBe('not-public');
    expect(addressClass('224.0.0.1')).toBe('not-public');
    expect(addressClass('::169.254.169.254')).toBe('not-public');
    expect(addressClass('hooks.example.com')).toBe('not-an-address');
  });
});

describe('resolving a callback host', () => {
  const url = new URL('https://hooks.example.com/mcp');
  const answers =
    (...addresses: string[]) =>
    () =>
      Promise.resolve(
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );

  it('pins the first address when every answer is public', async () => {
    await expect(
      resolveCallback(url, {}, answers('93.184.215.14', '2606:4700::1111')),
    ).resolves.toEqual({ url, address: '93.184.215.14', family: 4 });
  });

  it('refuses a host with any non-public answer (DNS rebinding), or none, or that does not resolve', async () => {
    await expect(resolveCallback(url, {}, answers('93.184.215.14', '10.0.0.7'))).rejects.toThrow(
      /resolves to a private, link-local or otherwise non-public address/,
    );
    await expect(resolveCallback(url, {}, answers('127.0.0.1'))).rejects.toThrow(
      /resolves to a loopback address/,
    );
    await expect(resolveCallback(url, {}, answers())).rejects.toThrow(/has no address/);
    await expect(
      resolveCallback(url, {}, () => Promise.reject(new Error('ENOTFOUND'))),
    ).rejects.toMatchObject({ code: 'TIDEMARK_WEBHOOK_REFUSED', retryable: true });
  });

  it('a literal is not looked up', async () => {
    const never = () => Promise.reject(new Error('looked up'));
    await expect(
      resolveCallback(new URL('https://93.184.215.14/h'), {}, never),
    ).resolves.toMatchObject({
      address: '93.184.215.14',
    });
  });
});
