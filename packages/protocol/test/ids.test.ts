import { describe, expect, it } from 'vitest';
import {
  formatGeneration,
  isTidemarkError,
  newWorkerEpoch,
  nextGeneration,
  parseGeneration,
  parseSessionId,
  parseStreamId,
  requestStreamId,
  STANDALONE_STREAM,
  TidemarkError,
  ErrorCodes,
} from '../src/index.js';
import { epochA, gen } from './helpers.js';

describe('identities', () => {
  it('keeps numeric and string request ids apart, and hashes long ones', () => {
    expect(requestStreamId(1)).not.toBe(requestStreamId('1'));
    expect(requestStreamId('x'.repeat(100))).toMatch(/^h[A-Za-z0-9_-]{27}$/);
    expect(requestStreamId('x'.repeat(100))).toBe(requestStreamId('x'.repeat(100)));
    for (const id of [1, -4, 1.5, 'abc', 'x'.repeat(100)])
      expect(parseStreamId(requestStreamId(id))).toBe(requestStreamId(id));
    expect(parseStreamId(STANDALONE_STREAM)).toBe(STANDALONE_STREAM);
    expect(parseStreamId('zzz')).toBeUndefined();
    expect(parseStreamId(`r${'x'.repeat(60)}`)).toBeUndefined();
  });

  it('validates session ids from headers', () => {
    expect(parseSessionId('c2Vzc2lvbi1vbmUtMTIzNDU2')).toBeDefined();
    expect(parseSessionId('short')).toBeUndefined();
    expect(parseSessionId('has space in it 1234567890')).toBeUndefined();
  });

  it('numbers generations across all workers, so a returning worker never repeats one', () => {
    const epoch = newWorkerEpoch();
    expect(nextGeneration(epoch, undefined)).toEqual({ epoch, attempt: 1 });
    expect(nextGeneration(epochA, gen(epoch, 4))).toEqual({ epoch: epochA, attempt: 5 });
    expect(parseGeneration(formatGeneration(gen(epochA, 12)))).toEqual(gen(epochA, 12));
    for (const bad of [
      '',
      'x.1',
      `${epochA}.0`,
      `${epochA}.01`,
      `${epochA}`,
      `${epochA}.99999999999`,
    ])
      expect(parseGeneration(bad)).toBeUndefined();
  });

  it('recognises its own errors, also across realms, and nothing else', () => {
    expect(isTidemarkError(new TidemarkError(ErrorCodes.malformedRecord, 'x'))).toBe(true);
    expect(isTidemarkError({ code: ErrorCodes.invalidOptions })).toBe(true);
    expect(isTidemarkError(new Error('x'))).toBe(false);
    expect(isTidemarkError({ code: 'ECONNRESET' })).toBe(false);
    expect(isTidemarkError(null)).toBe(false);
    expect(
      new TidemarkError(ErrorCodes.malformedRecord, 'x', { retryable: true, cause: 1 }),
    ).toMatchObject({ retryable: true, cause: 1 });
  });
});
