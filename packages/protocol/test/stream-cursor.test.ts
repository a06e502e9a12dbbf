import { describe, expect, it } from 'vitest';
import { StreamCursor, type CursorStep, type StampedRecord } from '../src/index.js';
import { epochA, epochB, gen, generationRecords, stream } from './helpers.js';

const kinds = (steps: CursorStep<string>[]) =>
  steps.map((step) =>
    step.kind === 'deliver'
      ? `${step.resetBefore ? `reset(${step.resetBefore.reason})+` : ''}${step.record.payload}${step.final ? '!' : ''}`
      : step.kind === 'reset-only'
        ? `reset(${step.reason})`
        : `skip(${step.why})`,
  );

function run(
  records: StampedRecord<string>[],
  options: Partial<ConstructorParameters<typeof StreamCursor>[0]> = {},
) {
  const cursor = new StreamCursor<string>({
    generation: undefined,
    nextSeq: 1,
    clientHasEvents: false,
    fromOffset: 0n,
    ...options,
  });
  return kinds(records.map((record) => cursor.accept(record)));
}

describe('StreamCursor', () => {
  it('delivers one generation in order and ends at its terminal record', () => {
    expect(run(generationRecords(gen(epochA, 1), 0n, 3, true))).toEqual([
      'skip(control)',
      'a1:1',
      'a1:2',
      'a1:3!',
    ]);
  });

  it('resets a client holding events when a new generation starts, then continues with it', () => {
    const records = [
      ...generationRecords(gen(epochA, 1), 0n, 2),
      ...generationRecords(gen(epochB, 2), 3n, 2, true),
    ];
    expect(run(records)).toEqual([
      'skip(control)',
      'a1:1',
      'a1:2',
      'reset(generation-superseded)',
      'b2:1',
      'b2:2!',
    ]);
  });

  it('adopts a new generation silently when the client has nothing to discard', () => {
    const records = [
      ...generationRecords(gen(epochA, 1), 0n, 0),
      ...generationRecords(gen(epochA, 2), 1n, 1),
    ];
    expect(run(records)).toEqual(['skip(control)', 'skip(control)', 'a2:1']);
  });

  it('drops a zombie’s records and everything after the terminal', () => {
    const first = generationRecords(gen(epochA, 1), 0n, 1);
    const second = generationRecords(gen(epochB, 2), 2n, 1, true);
    const zombie: StampedRecord<string> = {
      offset: 4n,
      stamp: { stream, generation: gen(epochA, 1), seq: 2, kind: 'message' },
      payload: 'a1:2',
    };
    expect(run([...first, ...second.slice(0, 1), zombie, ...second.slice(1)])).toEqual([
      'skip(control)',
      'a1:1',
      'reset(generation-superseded)',
      'skip(superseded)',
      'b2:1!',
    ]);
    expect(run([...second, zombie])).toEqual(['skip(control)', 'b2:1!', 'skip(after-terminal)']);
  });

  it('turns a seq hole into a reset to the earliest contiguous point', () => {
    const records = generationRecords(gen(epochA, 1), 0n, 5);
    expect(run([records[0]!, records[1]!, records[4]!, records[5]!])).toEqual([
      'skip(control)',
      'a1:1',
      'reset(seq-gap)+a1:4',
      'a1:5',
    ]);
  });

  it('continues a claim: skips what the client has, resets on a hole right after the claim', () => {
    const records = generationRecords(gen(epochA, 1), 0n, 5);
    expect(
      run(records.slice(3), { generation: gen(epochA, 1), nextSeq: 3, clientHasEvents: true }),
    ).toEqual(['a1:3', 'a1:4', 'a1:5']);
    expect(
      run(records.slice(4), { generation: gen(epochA, 1), nextSeq: 3, clientHasEvents: true }),
    ).toEqual(['reset(seq-gap)+a1:4', 'a1:5']);
    expect(
      run(records, {
        generation: gen(epochA, 1),
        nextSeq: 5,
        clientHasEvents: true,
        fromOffset: 0n,
      }).slice(-2),
    ).toEqual(['skip(duplicate)', 'a1:5']);
    expect(run(records, { fromOffset: 3n }).slice(0, 3)).toEqual([
      'skip(behind-start)',
      'skip(behind-start)',
      'skip(behind-start)',
    ]);
  });

  it('accepts the first record found after an eviction reset, then requires contiguity', () => {
    const records = generationRecords(gen(epochA, 1), 0n, 6);
    expect(run(records.slice(4), { generation: gen(epochA, 1), nextSeq: undefined })).toEqual([
      'a1:4',
      'a1:5',
      'a1:6',
    ]);
  });

  it('resets when the superseding generation’s start was not read and its first record is not seq 1', () => {
    const first = generationRecords(gen(epochA, 1), 0n, 1);
    const second = generationRecords(gen(epochB, 2), 2n, 3);
    expect(run([...first, second[2]!, second[3]!])).toEqual([
      'skip(control)',
      'a1:1',
      'reset(generation-superseded)+b2:2',
      'b2:3',
    ]);
  });

  it('follows nothing past a known end, and delivers the kept final record when the read never met it', () => {
    const done = generationRecords(gen(epochA, 1), 0n, 3, true);
    const late = generationRecords(gen(epochB, 2), 4n, 1);
    const terminal = {
      generation: gen(epochA, 1),
      record: { seq: 3, offset: 3n, payload: 'a1:3' },
    };
    const cursor = new StreamCursor<string>({
      generation: gen(epochA, 1),
      nextSeq: 1,
      clientHasEvents: false,
      fromOffset: 0n,
      terminal,
    });
    // The final record was compacted away: the read meets the start, 1, 2, then the later generation.
    const steps = [done[0]!, done[1]!, done[2]!, ...late].map((record) => cursor.accept(record));
    expect(kinds(steps)).toEqual([
      'skip(control)',
      'a1:1',
      'a1:2',
      'skip(after-terminal)',
      'skip(after-terminal)',
    ]);
    expect(kinds([cursor.complete(stream)!])).toEqual(['a1:3!']);
    expect(cursor.complete(stream)).toBeUndefined();
    // With a hole before the final record, the kept final record comes after a reset.
    const gappy = new StreamCursor<string>({
      generation: gen(epochA, 1),
      nextSeq: 1,
      clientHasEvents: true,
      fromOffset: 0n,
      terminal,
    });
    gappy.accept(done[1]!);
    expect(kinds([gappy.complete(stream)!])).toEqual(['reset(seq-gap)+a1:3!']);
  });
});
