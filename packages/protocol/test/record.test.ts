import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeStamp,
  encodeStamp,
  ErrorCodes,
  JsonText,
  readStampedFrame,
  readStampedRecord,
  StampHeaders,
  type RecordStamp,
} from '../src/index.js';
import { epochA, gen, stream } from './helpers.js';

describe('record stamps', () => {
  it('round-trip through headers', () => {
    const stamps: RecordStamp[] = [
      { stream, generation: gen(epochA, 1), seq: 0, kind: 'generation-start', cause: 'first' },
      { stream, generation: gen(epochA, 2), seq: 9, kind: 'message' },
      { stream, generation: gen(epochA, 2), seq: 10, kind: 'terminal' },
    ];
    for (const stamp of stamps)
      expect(decodeStamp(encodeStamp(stamp))).toEqual({ ok: true, stamp });
  });

  it('refuses a record that is not Tidemark’s, or of a newer version, without throwing', () => {
    expect(decodeStamp([])).toMatchObject({
      ok: false,
      error: { code: ErrorCodes.malformedRecord },
    });
    expect(decodeStamp([[StampHeaders.version, '2']])).toMatchObject({
      ok: false,
      error: { code: ErrorCodes.unsupportedVersion },
    });
  });

  it('refuses inconsistent stamps', () => {
    const base = encodeStamp({ stream, generation: gen(epochA, 1), seq: 3, kind: 'message' });
    const withHeader = (name: string, value: string) => [
      [name, value] as [string, string],
      ...base,
    ];
    expect(decodeStamp(withHeader(StampHeaders.seq, '0')).ok).toBe(false); // seq 0 on a message
    expect(decodeStamp(withHeader(StampHeaders.kind, 'x')).ok).toBe(false);
    expect(decodeStamp(withHeader(StampHeaders.generation, 'nope')).ok).toBe(false);
    expect(decodeStamp(withHeader(StampHeaders.stream, '')).ok).toBe(false);
    expect(decodeStamp(withHeader(StampHeaders.cause, 'retry')).ok).toBe(false); // cause on a message
    expect(decodeStamp(withHeader(StampHeaders.seq, '01')).ok).toBe(false);
  });

  it('never throws on arbitrary headers', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...Object.values(StampHeaders), 'x'), fc.string())),
        (headers) => {
          const result = decodeStamp(headers);
          expect(typeof result.ok).toBe('boolean');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('records read as frames (the message as its JSON text)', () => {
  const headers = encodeStamp({ stream, generation: gen(epochA, 1), seq: 1, kind: 'message' });
  const record = (text: string | null) => ({
    offset: 7n,
    headers,
    value: text === null ? null : Buffer.from(text),
  });

  it('carry the worker’s JSON unparsed, and read like readStampedRecord', () => {
    const message = {
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { note: 'é\u2028' },
    };
    const text = JSON.stringify(message);
    const frame = readStampedFrame(record(text));
    expect(frame?.payload).toBeInstanceOf(JsonText);
    expect(frame?.payload?.text).toBe(text);
    expect(frame?.payload?.bytes.equals(Buffer.from(text))).toBe(true);
    expect(JSON.parse(JSON.stringify(frame?.payload))).toEqual(message);
    expect({ ...frame, payload: undefined }).toEqual({
      ...readStampedRecord(record(text)),
      payload: undefined,
    });
    expect(readStampedFrame(record(null))).toEqual(readStampedRecord(record(null)));
  });

  it('refuse what could not be one SSE event: not an object, split over lines, not UTF-8', () => {
    for (const text of ['[1]', '"x"', '{"a":\n1}', '{"a":\r1}', '', '{"a":1'])
      expect(readStampedFrame(record(text))).toBeUndefined();
    const latin1 = Buffer.from('{"a":"\u00e9"}', 'latin1');
    expect(readStampedFrame({ ...record(null), value: latin1 })).toBeUndefined();
    expect(readStampedFrame({ offset: 1n, headers: [], value: Buffer.from('{}') })).toBeUndefined();
  });
});
