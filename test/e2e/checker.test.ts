import { describe, expect, it } from 'vitest';
import { classify, classifyTask, tally, type Seen } from './checker.js';

const p = (...values: number[]): Seen[] => values.map((value) => ({ kind: 'progress', value }));
/** A re-run's progress as the worker writes it: positions continued past `base`, of `base + n`. */
const continued = (base: number, n: number, ...positions: number[]): Seen[] =>
  positions.map((at) => ({ kind: 'progress', value: base + at, total: base + n }));
const reset: Seen = { kind: 'reset', reason: 'generation-superseded' };
const result = (n: number): Seen => ({
  kind: 'result',
  numbers: Array.from({ length: n }, (_, i) => i + 1),
});

describe('the checker', () => {
  it('calls a complete, reset-free stream exact', () => {
    expect(classify(3, [...p(1, 2, 3), result(3)])).toEqual({ outcome: 'exact' });
  });

  it("catches the seed's first failure: a restarted counter spliced in without a reset", () => {
    expect(classify(5, [...p(1, 2, 3, 1, 2, 3, 4, 5), result(5)])).toMatchObject({
      outcome: 'silently-wrong',
    });
  });

  it('accepts the same stream when the client was told: reset, then 1..n continuing the numbering', () => {
    expect(
      classify(5, [...p(1, 2, 3), reset, ...continued(3, 5, 1, 2, 3, 4, 5), result(5)]),
    ).toEqual({ outcome: 'reset' });
  });

  it('progress that goes back on the wire is wrong, even after a reset — unless the log lost what came before', () => {
    expect(classify(5, [...p(1, 2, 3), reset, ...p(1, 2, 3, 4, 5), result(5)])).toMatchObject({
      outcome: 'silently-wrong',
      why: 'progress went back: 3 → 1',
    });
    expect(
      classify(5, [...p(1, 2, 3), reset, ...p(1, 2, 3, 4, 5), result(5)], { logLost: true })
        .outcome,
    ).toBe('reset');
    const evicted: Seen = { kind: 'reset', reason: 'evicted' };
    expect(classify(5, [...p(1, 2, 3), evicted, ...p(1, 2, 3, 4, 5), result(5)]).outcome).toBe(
      'reset',
    );
  });

  it('accepts a reset after which only the surviving tail (or only the result) arrives', () => {
    expect(classify(5, [...p(1), reset, ...continued(1, 5, 4, 5), result(5)]).outcome).toBe(
      'reset',
    );
    expect(classify(5, [...p(1, 2), reset, result(5)]).outcome).toBe('reset');
  });

  it('catches gaps, duplicates, a missing end, a wrong result and missing events', () => {
    expect(classify(4, [...p(1, 3, 4), result(4)]).outcome).toBe('silently-wrong');
    expect(classify(4, [...p(1, 2, 2, 3, 4), result(4)]).outcome).toBe('silently-wrong');
    expect(classify(4, [...p(1, 2), reset, ...p(1, 2), result(4)]).outcome).toBe('silently-wrong');
    expect(classify(4, [...p(1, 2, 3, 4), result(3)]).outcome).toBe('silently-wrong');
    expect(classify(4, [result(4)]).outcome).toBe('silently-wrong');
    expect(classify(4, [...p(2, 3, 4), result(4)]).outcome).toBe('silently-wrong');
  });

  it('tells errored from lost', () => {
    expect(classify(3, [...p(1), { kind: 'error', message: 'gave up' }]).outcome).toBe('errored');
    expect(classify(3, p(1, 2))).toMatchObject({ outcome: 'lost' });
    expect(
      tally([{ outcome: 'exact' }, { outcome: 'exact' }, { outcome: 'lost', why: 'x' }]),
    ).toEqual({
      exact: 2,
      reset: 0,
      errored: 0,
      'silently-wrong': 0,
      lost: 1,
      'needless-reset': 0,
    });
  });

  it('calls a call the server accepted and never answered lost — not errored', () => {
    expect(classify(3, [...p(1), { kind: 'no-answer', afterMs: 90_000 }])).toEqual({
      outcome: 'lost',
      why: 'no answer after 90 s',
    });
  });

  it('calls a reset that nothing could cause needless, and one a fault explains a reset', () => {
    const seen = [...p(1, 2), reset, ...continued(2, 3, 1, 2, 3), result(3)];
    expect(classify(3, seen, { resetExcused: () => false })).toEqual({
      outcome: 'needless-reset',
      why: 'reset (generation-superseded) with nothing during the call that could cause it',
    });
    expect(
      classify(3, seen, { resetExcused: (reason) => reason === 'generation-superseded' }),
    ).toEqual({
      outcome: 'reset',
    });
    // A wrong stream stays wrong, excused or not.
    expect(classify(3, [...p(1, 3), result(3)], { resetExcused: () => false }).outcome).toBe(
      'silently-wrong',
    );
  });
});

describe('the task checker', () => {
  const done = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

  it('calls a task exact when the client and the read-back agree', () => {
    expect(
      classifyTask(3, {
        statuses: ['working', 'completed', 'completed', 'completed'],
        numbers: done(3),
        readBack: { numbers: done(3) },
      }),
    ).toEqual({ outcome: 'exact' });
  });

  it('catches a terminal status that changes when read back', () => {
    expect(
      classifyTask(3, {
        statuses: ['working', 'failed', 'working', 'completed'],
        ending: 'failed',
      }),
    ).toMatchObject({
      outcome: 'silently-wrong',
      why: 'status left failed: working → failed → working → completed',
    });
  });

  it('catches a read-back result other than the one the client got', () => {
    expect(
      classifyTask(3, {
        statuses: ['working', 'completed', 'completed'],
        numbers: done(3),
        readBack: { numbers: [1, 2, 3, 1, 2, 3] },
      }).outcome,
    ).toBe('silently-wrong');
  });

  it('calls a task that became unknown, or was never seen created, lost; a failure errored', () => {
    expect(
      classifyTask(3, {
        statuses: ['working', 'completed', 'unknown'],
        numbers: done(3),
        readBack: { unknown: true },
      }).outcome,
    ).toBe('lost');
    expect(classifyTask(3, { statuses: [], numbers: done(3) }).outcome).toBe('lost');
    expect(
      classifyTask(3, { statuses: ['working', 'failed', 'failed'], ending: 'failed' }),
    ).toEqual({ outcome: 'errored' });
    expect(classifyTask(3, { statuses: ['sleeping'], numbers: done(3) }).outcome).toBe(
      'silently-wrong',
    );
  });
});
