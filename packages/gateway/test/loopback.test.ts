import { describe, expect, it } from 'vitest';
import { isLoopbackHost, isLoopbackOrigin, LOOPBACK_ADDRESSES } from '../src/http/index.js';

describe('this machine', () => {
  it('Host headers and listening addresses that name it, with or without a port', () => {
    for (const host of [
      'localhost',
      'LOCALHOST:3000',
      '127.0.0.1',
      '127.0.0.1:80',
      '[::1]',
      '[::1]:3000',
      '::1',
    ])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of [
      '',
      '0.0.0.0',
      'evil.example',
      'localhost.evil.example',
      '127.0.0.2',
      '[::2]:3000',
      '10.0.0.1:3000',
    ])
      expect(isLoopbackHost(host), host).toBe(false);
  });

  it('Origins of pages it serves, and no other', () => {
    for (const origin of ['http://localhost:3000', 'https://127.0.0.1', 'http://[::1]:8080'])
      expect(isLoopbackOrigin(origin), origin).toBe(true);
    for (const origin of [
      'null',
      'http://localhost.evil.example',
      'http://evil.example',
      'file://',
      'http://127.0.0.1:80/x',
    ])
      expect(isLoopbackOrigin(origin), origin).toBe(false);
  });

  it('peer addresses as Node reports them', () => {
    expect([...LOOPBACK_ADDRESSES].sort()).toEqual(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
  });
});
