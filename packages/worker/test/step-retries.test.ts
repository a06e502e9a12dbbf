import type { StepRecord } from '@tidemark/log';
import {
  NonRetryableError,
  RetryableToolError,
  StepFailedError,
  type StepReport,
} from '@tidemark/tools';
import type { Execution } from '@tidemark/tools';
import { runInExecution } from '@tidemark/tools/runtime';
import { describe, expect, it } from 'vitest';
import { memorySteps } from './memory-steps.js';

// A step's retry policy (`step(name, fn, { retry })`), on the journal a worker keeps: the tries,
// the waits between them (asked of an injected clock, so nothing here waits), what is journaled
// between two tries, and a call run again elsewhere going on counting.

function harness(journal = new Map<string, StepRecord>(), sleep?: (ms: number) => Promise<void>) {
  const waits: number[] = [];
  const reports: StepReport[] = [];
  const steps = memorySteps(journal, {
    replay: true,
    onStep: (report) => reports.push(report),
    sleep: sleep ?? ((ms) => Promise.resolve(void waits.push(ms))),
  });
  return { step: steps.forExecution('e.1').step, journal, waits, reports };
}

/** A function that fails its first `failures` tries (with `error`), then answers. */
function flaky(
  failures: number,
  error: (attempt: number) => unknown = (n) => new Error(`down ${n}`),
) {
  const seen: Array<{ attempt: number; effectKey: string }> = [];
  const fn = ({ attempt, effectKey }: { attempt: number; effectKey: string }) => {
    seen.push({ attempt, effectKey });
    if (attempt <= failures) throw error(attempt);
    return `done at ${attempt}`;
  };
  return { fn, seen };
}

const policy = { maxAttempts: 4, initialDelayMs: 100, backoffFactor: 3, maxDelayMs: 500 };

describe('step retry policies', () => {
  it('tries again with backoff up to the policy, with one effect key, and journals the tries it took', async () => {
    const { step, journal, waits, reports } = harness();
    const { fn, seen } = flaky(3);
    await expect(step('charge', fn, { retry: policy })).resolves.toBe('done at 4');
    expect(waits).toEqual([100, 300, 500]);
    expect(seen.map((s) => s.attempt)).toEqual([1, 2, 3, 4]);
    expect(new Set(seen.map((s) => s.effectKey)).size).toBe(1);
    expect(reports).toEqual([
      { step: 'charge', replayed: false, ok: false, attempts: 1, retryInMs: 100 },
      { step: 'charge', replayed: false, ok: false, attempts: 2, retryInMs: 300 },
      { step: 'charge', replayed: false, ok: false, attempts: 3, retryInMs: 500 },
      { step: 'charge', replayed: false, ok: true, attempts: 4 },
    ]);
    expect(journal.get('charge')).toMatchObject({ outcome: { ok: true }, attempts: 4 });
  });

  it('past maxAttempts the last error is the outcome: thrown now, and by every replay', async () => {
    const { step, journal } = harness();
    const { fn, seen } = flaky(9);
    await expect(step('charge', fn, { retry: { ...policy, maxAttempts: 2 } })).rejects.toThrow(
      'down 2',
    );
    expect(seen).toHaveLength(2);
    const again = harness(journal);
    const never = flaky(0);
    const replay = again.step('charge', never.fn, { retry: policy });
    await expect(replay).rejects.toBeInstanceOf(StepFailedError);
    await expect(replay).rejects.toThrow('down 2');
    expect(never.seen).toEqual([]);
    expect(again.reports).toEqual([{ step: 'charge', replayed: true, ok: false, attempts: 2 }]);
  });

  it('a NonRetryableError ends the step at once, whatever the policy', async () => {
    const { step, journal, waits } = harness();
    const { fn, seen } = flaky(9, () => new NonRetryableError('card refused'));
    await expect(step('charge', fn, { retry: policy })).rejects.toThrow('card refused');
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(journal.get('charge')).toMatchObject({
      outcome: { ok: false, error: { name: 'NonRetryableError', message: 'card refused' } },
    });
  });

  it("an error's retryAfterMs is waited, past maxDelayMs if need be", async () => {
    const { step, waits } = harness();
    const busy = (n: number) => Object.assign(new Error(`429 ${n}`), { retryAfterMs: 2_500 });
    await step('charge', flaky(1, busy).fn, { retry: policy });
    expect(waits).toEqual([2_500]);
  });

  it('a call-level retryable error is not a step retry: the call runs again, the step with it', async () => {
    const { step, journal, waits } = harness();
    const { fn, seen } = flaky(9, () => new RetryableToolError('the call, again'));
    await expect(step('charge', fn, { retry: policy })).rejects.toBeInstanceOf(RetryableToolError);
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(journal.get('charge')).toBeUndefined();
  });

  it('between two tries the journal holds the count and the time of the next: another execution goes on from there', async () => {
    // The first execution's worker "dies" while the step waits: its sleep never ends.
    const first = harness(new Map(), () => new Promise<void>(() => undefined));
    const { fn, seen } = flaky(1);
    const before = Date.now();
    const slow = { ...policy, initialDelayMs: 60_000, maxDelayMs: 60_000 };
    void first.step('charge', fn, { retry: slow });
    await expect.poll(() => first.journal.get('charge')).toBeDefined();
    const pending = first.journal.get('charge') as Extract<StepRecord, { retrying: unknown }>;
    expect(pending.retrying).toMatchObject({ attempts: 1, error: { message: 'down 1' } });
    expect(pending.retrying.nextAtMs).toBeGreaterThanOrEqual(before + 60_000);

    const next = harness(first.journal);
    await expect(next.step('charge', fn, { retry: slow })).resolves.toBe('done at 2');
    // It waited what was left of the first execution's wait, not a new one from the start.
    expect(next.waits).toHaveLength(1);
    expect(next.waits[0]).toBeGreaterThan(55_000);
    expect(next.waits[0]).toBeLessThanOrEqual(60_000);
    expect(seen.map((s) => s.attempt)).toEqual([1, 2]);
    expect(next.journal.get('charge')).toMatchObject({ outcome: { ok: true }, attempts: 2 });
  });

  it('a call cancelled while its step waits stops waiting; the journal keeps the count for whoever goes on', async () => {
    const journal = new Map<string, StepRecord>();
    const steps = memorySteps(journal, {
      replay: false,
    });
    const cancel = new AbortController();
    const ex = { ...steps.forExecution('e.1'), abortSignal: cancel.signal } as unknown as Execution;
    const { fn, seen } = flaky(9);
    const waiting = runInExecution(ex, () =>
      ex.step('charge', fn, { retry: { ...policy, initialDelayMs: 60_000, maxDelayMs: 60_000 } }),
    );
    await expect.poll(() => journal.get('charge')).toBeDefined();
    cancel.abort(new Error('cancelled by the client'));
    await expect(waiting).rejects.toThrow('cancelled by the client');
    expect(seen).toHaveLength(1);
    expect(journal.get('charge')).toMatchObject({ retrying: { attempts: 1 } });
  });

  it('without a policy a step is tried once, its error its outcome', async () => {
    const { step, waits } = harness();
    const { fn, seen } = flaky(1);
    await expect(step('charge', fn)).rejects.toThrow('down 1');
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([]);
  });

  it.each([
    [{ maxAttempts: 0 }, 'retry.maxAttempts'],
    [{ maxAttempts: 2.5 }, 'retry.maxAttempts'],
    [{ initialDelayMs: -1 }, 'retry.initialDelayMs'],
    [{ maxDelayMs: Number.POSITIVE_INFINITY }, 'retry.maxDelayMs'],
    [{ backoffFactor: 0.5 }, 'retry.backoffFactor'],
  ])('refuses the policy %j before the step runs (%s)', async (retry, named) => {
    const { step } = harness();
    const { fn, seen } = flaky(0);
    await expect(step('charge', fn, { retry })).rejects.toThrow(named);
    expect(seen).toEqual([]);
  });
});
