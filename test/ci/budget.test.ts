import { describe, expect, it } from 'vitest';
import { type Budget, checkBudget, type Durations, recordBudget } from '../support/durations.ts';

// The suite's time budget (#54): a full run more than 10% above the recorded time fails until the
// budget is recorded again with a reason.

const run = (unit: number, kafka: number): Durations => ({
  recordedAt: '2026-12-03T00:00:00.000Z',
  projects: { unit, kafka },
  files: {
    'a.test.ts': { project: 'unit', seconds: unit },
    'b.kafka.test.ts': { project: 'kafka', seconds: kafka },
  },
});
const budget: Budget = {
  tolerance: 0.1,
  recorded: { at: 'then', vitestFileSeconds: 1_000, projects: {}, phases: {} },
  reasons: [],
};

describe('the time budget', () => {
  it('passes up to the tolerance and fails past it, naming what grew', () => {
    expect(checkBudget(run(300, 800), budget)).toMatchObject({
      ok: true,
      total: 1_100,
      limit: 1_100,
    });
    const over = checkBudget(run(300, 801), budget, run(300, 700));
    expect(over).toMatchObject({ ok: false, total: 1_101 });
    expect(over.grew[0]).toEqual({ file: 'b.kafka.test.ts', was: 700, now: 801 });
  });

  it('records a new budget only with a reason, and keeps the reasons', () => {
    expect(() => recordBudget(budget, run(400, 900), {}, '')).toThrow(/say why/);
    const next = recordBudget(
      budget,
      run(400, 900),
      { vitest: 700 },
      'the chaos runner sends errored calls again',
    );
    expect(next.recorded).toMatchObject({ vitestFileSeconds: 1_300, phases: { vitest: 700 } });
    expect(next.reasons).toEqual([
      {
        at: '2026-12-03T00:00:00.000Z',
        vitestFileSeconds: 1_300,
        reason: 'the chaos runner sends errored calls again',
      },
    ]);
    expect(checkBudget(run(400, 900), next).ok).toBe(true);
  });
});
