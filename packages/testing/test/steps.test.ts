import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { currentExecution, defineToolModule, RetryableToolError } from '@tidemark/tools';
import { runTool } from '@tidemark/testing';
import { describe, expect, it } from 'vitest';

// Durable steps in the tool authors' harness: journaled in memory as a worker journals them in the
// log, so a retry (a new execution of the same call) replays them.

/** A module whose one tool runs what the test gives it, with retries. */
function toolOf(body: () => Promise<unknown>) {
  return defineToolModule({
    name: 'steps-test',
    retry: { maxAttempts: 3, backoffMs: 1 },
    register: (server) => {
      server.registerTool('t', { description: 'test' }, async () => ({
        content: [{ type: 'text' as const, text: JSON.stringify(await body()) }],
      }));
    },
  });
}

describe('durable steps (runTool)', () => {
  it('a retry replays the journaled charge: the payment API is asked once, the call answers once', async () => {
    const api = new PretendPayments(undefined);
    const run = await runTool(paymentsModule(api), 'pay', {
      to: 'ada@example.com',
      amountCents: 1250,
      failAfterCharge: 2,
    });
    expect(run.result.isError).not.toBe(true);
    expect(run.attempts).toBe(3);
    const charges = api.entries().filter((e) => e.kind === 'charge');
    expect(charges).toHaveLength(1);
    expect(api.entries().filter((e) => e.kind === 'receipt')).toHaveLength(1);
    expect(run.result.structuredContent).toMatchObject({ chargeId: charges[0]!.id });
    expect(run.steps).toEqual([
      { step: 'charge', replayed: false, ok: true, attempts: 1, attempt: 1 },
      { step: 'charge', replayed: true, ok: true, attempts: 1, attempt: 2 },
      { step: 'charge', replayed: true, ok: true, attempts: 1, attempt: 3 },
      { step: 'receipt', replayed: false, ok: true, attempts: 1, attempt: 3 },
    ]);
  });

  it("a step's retry policy tries it again in the same execution, as its error's retryAfterMs asks: run.steps shows each try", async () => {
    const api = new PretendPayments(undefined);
    const run = await runTool(paymentsModule(api), 'pay', {
      to: 'ada@example.com',
      amountCents: 1250,
      receiptRefusals: 2,
      receiptRetryAfterMs: 5,
    });
    expect(run.result.isError).not.toBe(true);
    expect(run.attempts).toBe(1);
    expect(api.entries().map((e) => e.kind)).toEqual([
      'charge',
      'receipt-refused',
      'receipt-refused',
      'receipt',
    ]);
    expect(run.steps.filter((s) => s.step === 'receipt')).toEqual([
      { step: 'receipt', replayed: false, ok: false, attempts: 1, retryInMs: 5, attempt: 1 },
      { step: 'receipt', replayed: false, ok: false, attempts: 2, retryInMs: 5, attempt: 1 },
      { step: 'receipt', replayed: false, ok: true, attempts: 3, attempt: 1 },
    ]);
  });

  it('steps of one name are told apart by their order; effect keys are stable per step and distinct', async () => {
    const keys: string[][] = [];
    const run = await runTool(
      toolOf(async () => {
        const execution = currentExecution()!;
        const seen: string[] = [];
        for (let i = 0; i < 3; i++)
          seen.push(await execution.step('send', ({ step, effectKey }) => `${step} ${effectKey}`));
        keys.push(seen);
        if (execution.attempt === 1) throw new RetryableToolError('again');
        return seen;
      }),
      't',
      {},
    );
    expect(run.result.isError).not.toBe(true);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toEqual(keys[0]);
    expect(keys[0]!.map((k) => k.split(' ')[0])).toEqual(['send', 'send#2', 'send#3']);
    expect(new Set(keys[0]!.map((k) => k.split(' ')[1])).size).toBe(3);
    expect(run.steps.filter((s) => s.replayed)).toHaveLength(3);
  });

  it('an error the step threw is journaled and thrown again on replay, without running it', async () => {
    let runs = 0;
    const outcomes: string[] = [];
    await runTool(
      toolOf(async () => {
        const execution = currentExecution()!;
        try {
          await execution.step('refund', () => {
            runs++;
            throw Object.assign(new Error('card declined'), { code: 'declined' });
          });
        } catch (error) {
          outcomes.push(
            `${(error as Error).message}/${String((error as { code?: unknown }).code)}`,
          );
        }
        if (execution.attempt === 1) throw new RetryableToolError('again');
        return outcomes;
      }),
      't',
      {},
    );
    expect(runs).toBe(1);
    expect(outcomes).toEqual(['card declined/declined', 'card declined/declined']);
  });

  it('a retryable error in a step is not an outcome: the retry runs the step again', async () => {
    let runs = 0;
    const run = await runTool(
      toolOf(() =>
        currentExecution()!.step('flaky', () => {
          runs++;
          if (runs === 1) throw new RetryableToolError('try later');
          return runs;
        }),
      ),
      't',
      {},
    );
    expect(runs).toBe(2);
    expect(run.result.content).toEqual([{ type: 'text', text: '2' }]);
  });

  it('a value that is not JSON, too large, or a bad name fails the step with a clear error', async () => {
    const failing = async (body: () => Promise<unknown>) =>
      (await runTool(toolOf(body), 't', {})).result;
    const step = (name: string, value: () => unknown) =>
      currentExecution()!.step<unknown>(name, value);
    expect(JSON.stringify(await failing(() => step('big', () => 'x'.repeat(70_000))))).toContain(
      'more than maxStepBytes',
    );
    expect(JSON.stringify(await failing(() => step('bigint', () => 1n)))).toContain('is not JSON');
    expect(JSON.stringify(await failing(() => step('', () => 1)))).toContain('step name');
  });

  it('one call takes at most 10,000 durable steps: the next fails the call, said (security review L10)', async () => {
    let done = 0;
    const result = await runTool(
      toolOf(async () => {
        for (;;) {
          await currentExecution()!.step('tick', () => undefined);
          done++;
        }
      }),
      't',
      {},
    );
    expect(done).toBe(10_000);
    expect(JSON.stringify(result.result)).toContain('at most 10000 durable steps in one call');
  });

  it('the value is returned as a replay returns it (JSON), the first time too', async () => {
    const run = await runTool(
      toolOf(async () => {
        const when = await currentExecution()!.step('now', () => new Date(0));
        return typeof when;
      }),
      't',
      {},
    );
    expect(run.result.content).toEqual([{ type: 'text', text: '"string"' }]);
  });

  it('skipWaits: a day-long durable sleep is journaled and skipped; without it a short one waits', async () => {
    const api = new PretendPayments(undefined);
    const args = { to: 'ada@example.com', amountCents: 1250, receiptAfterMs: 86_400_000 };
    const started = Date.now();
    const run = await runTool(paymentsModule(api), 'pay', args, { skipWaits: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(run.result.isError).not.toBe(true);
    expect(run.steps.map((s) => s.step)).toEqual(['charge', 'sleep before receipt', 'receipt']);
    expect(api.entries().map((e) => e.kind)).toEqual(['charge', 'receipt']);

    const waited = Date.now();
    const short = await runTool(paymentsModule(api), 'pay', { ...args, receiptAfterMs: 300 });
    expect(short.result.isError).not.toBe(true);
    expect(Date.now() - waited).toBeGreaterThanOrEqual(300);
  });

  it('a sleep inside a step, or of a bad length, is refused with a clear error', async () => {
    const inStep = await runTool(
      toolOf(() => currentExecution()!.step('outer', () => currentExecution()!.sleep('x', 10))),
      't',
      {},
    );
    expect(inStep.result.isError).toBe(true);
    expect(JSON.stringify(inStep.result.content)).toContain('a sleep outside any step');
    const negative = await runTool(
      toolOf(() => currentExecution()!.sleep('x', -1)),
      't',
      {},
    );
    expect(negative.result.isError).toBe(true);
    expect(JSON.stringify(negative.result.content)).toContain('sleep ms');
  });
});
