import { describe, expect, it } from 'vitest';
import { foldStreamHead, type StampedRecord, type StreamHead } from '../src/index.js';
import { epochA, epochB, gen, generationRecords, stream } from './helpers.js';

function fold(records: StampedRecord<string>[]) {
  let head: StreamHead<string> | undefined;
  const effects: string[] = [];
  for (const record of records) {
    const result = foldStreamHead(head, record);
    head = result.head;
    effects.push(result.effect);
  }
  return { head, effects };
}

describe('foldStreamHead', () => {
  it('tracks one generation to its terminal record', () => {
    const { head, effects } = fold(generationRecords(gen(epochA, 1), 10n, 3, true));
    expect(effects).toEqual(['started', 'appended', 'appended', 'terminal']);
    expect(head).toMatchObject({
      generation: gen(epochA, 1),
      startOffset: 10n,
      lastSeq: 3,
      position: 14n,
      terminal: { seq: 3, offset: 13n, payload: 'a1:3' },
    });
  });

  it('lets a higher attempt supersede, and drops the superseded generation’s later records', () => {
    const first = generationRecords(gen(epochA, 1), 0n, 2);
    const second = generationRecords(gen(epochB, 2), 3n, 1);
    const zombie: StampedRecord<string> = {
      offset: 5n,
      stamp: { stream, generation: gen(epochA, 1), seq: 3, kind: 'terminal' },
    };
    const { head, effects } = fold([...first, ...second, zombie]);
    expect(effects).toEqual([
      'started',
      'appended',
      'appended',
      'superseded',
      'appended',
      'dropped-superseded',
    ]);
    expect(head).toMatchObject({
      generation: gen(epochB, 2),
      startOffset: 3n,
      lastSeq: 1,
      terminal: undefined,
      cause: 'takeover',
    });
  });

  it('keeps the first terminal: nothing after it counts, not even a new generation', () => {
    const done = generationRecords(gen(epochA, 1), 0n, 2, true);
    const late = generationRecords(gen(epochB, 2), 3n, 1);
    const { head, effects } = fold([...done, ...late]);
    expect(effects.slice(3)).toEqual(['dropped-after-terminal', 'dropped-after-terminal']);
    expect(head?.generation).toEqual(gen(epochA, 1));
  });

  it('records a seq hole as the new contiguous start', () => {
    const records = generationRecords(gen(epochA, 1), 0n, 6);
    const { head, effects } = fold([
      records[0]!,
      records[1]!,
      records[2]!,
      records[5]!,
      records[6]!,
    ]);
    expect(effects).toEqual(['started', 'appended', 'appended', 'gap', 'appended']);
    expect(head).toMatchObject({ contiguousFromSeq: 5, contiguousFromOffset: 5n, lastSeq: 6 });
  });

  it('ignores duplicates, a lower attempt and records behind its position', () => {
    const records = generationRecords(gen(epochB, 2), 0n, 2);
    const lower = generationRecords(gen(epochA, 1), 3n, 1);
    const { head, effects } = fold([...records, records[1]!, ...lower]);
    expect(effects).toEqual([
      'started',
      'appended',
      'appended',
      'dropped-behind-position',
      'dropped-superseded',
      'dropped-superseded',
    ]);
    const duplicate = { ...records[2]!, offset: 9n };
    expect(foldStreamHead(head, duplicate).effect).toBe('duplicate');
  });

  it('starts mid-generation when its start record was not read', () => {
    const records = generationRecords(gen(epochA, 1), 0n, 4);
    const { head } = fold(records.slice(3));
    expect(head).toMatchObject({
      startOffset: 3n,
      lastSeq: 4,
      contiguousFromSeq: 3,
      contiguousFromOffset: 3n,
    });
  });
});

describe('stored heads', () => {
  it('round-trip through the streams topic format, final payload included', async () => {
    const { decodeStreamHead, encodeStreamHead } = await import('../src/index.js');
    const { head } = fold(generationRecords(gen(epochA, 2), 10n, 3, true));
    expect(decodeStreamHead(encodeStreamHead(head!))).toEqual(head);
    const open = fold(generationRecords(gen(epochA, 1), 0n, 1)).head!;
    expect(decodeStreamHead(encodeStreamHead(open))).toEqual(open);
    for (const bad of [
      '',
      '{',
      'null',
      '{"v":2}',
      JSON.stringify({ ...JSON.parse(encodeStreamHead(open)), startOffset: 'x' }),
    ]) {
      expect(decodeStreamHead(bad)).toBeUndefined();
    }
  });
});
