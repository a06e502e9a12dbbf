import { currentExecution, defineToolModule, RetryableToolError } from '@tidemark/tools';
import { openToolSession, runTool } from '@tidemark/testing';
import { describe, expect, it } from 'vitest';

// Compensations (a saga): the undo of each effect, registered after the step that took it, runs
// the last first when the call fails for good or is cancelled — each a durable step, once per call
// — and never when the call succeeds, nor for a failure the call's retry mends.

/** A booking: reserve a seat, charge, then `then` decides how it ends. */
function booking(done: string[], then: (attempt: number, signal: AbortSignal) => Promise<void>) {
  return defineToolModule({
    name: 'booking',
    retry: { maxAttempts: 3, backoffMs: 1 },
    register: (server) => {
      server.registerTool('book', { description: 'books a seat' }, async (ctx) => {
        const ex = currentExecution()!;
        const seat = await ex.step('reserve', () => (done.push('reserve'), 'seat 12A'));
        ex.compensate('release', () => void done.push(`release ${seat}`));
        const charge = await ex.step('charge', () => (done.push('charge'), 'ch_1'));
        ex.compensate('refund', () => void done.push(`refund ${charge}`));
        await then(ex.attempt, ctx.mcpReq.signal);
        return { content: [{ type: 'text' as const, text: `${seat} ${charge}` }] };
      });
    },
  });
}

describe('compensations (runTool)', () => {
  it('a call that fails for good undoes its effects, the last first, each once and journaled', async () => {
    const done: string[] = [];
    const run = await runTool(
      booking(done, () => Promise.reject(new Error('no seat map'))),
      'book',
      {},
    );
    expect(run.result.isError).toBe(true);
    expect(done).toEqual(['reserve', 'charge', 'refund ch_1', 'release seat 12A']);
    expect(run.steps.map((s) => [s.step, s.replayed, s.ok])).toEqual([
      ['reserve', false, true],
      ['charge', false, true],
      ['compensate refund', false, true],
      ['compensate release', false, true],
    ]);
  });

  it('a failure the retry mends undoes nothing; the retry replays the steps and succeeds', async () => {
    const done: string[] = [];
    const run = await runTool(
      booking(done, (attempt) =>
        attempt === 1 ? Promise.reject(new RetryableToolError('busy')) : Promise.resolve(),
      ),
      'book',
      {},
    );
    expect(run.result.isError).not.toBe(true);
    expect(run.attempts).toBe(2);
    expect(done).toEqual(['reserve', 'charge']);
  });

  it('a cancelled call undoes its effects, the last first', async () => {
    const done: string[] = [];
    const session = await openToolSession(
      booking(
        done,
        (_, signal) =>
          new Promise((_resolve, reject) =>
            signal.addEventListener('abort', () => reject(new Error('cancelled')), {
              once: true,
            }),
          ),
      ),
    );
    try {
      const cancel = new AbortController();
      const call = session.call('book', {}, { signal: cancel.signal });
      await expect.poll(() => done).toEqual(['reserve', 'charge']);
      cancel.abort('the user changed their mind');
      await expect(call).rejects.toThrow();
      await expect
        .poll(() => done)
        .toEqual(['reserve', 'charge', 'refund ch_1', 'release seat 12A']);
    } finally {
      await session.close();
    }
  });

  it('refuses a compensation without a name or a function, where the tool registers it', async () => {
    const errors: string[] = [];
    await runTool(
      defineToolModule({
        name: 'bad',
        register: (server) => {
          server.registerTool('t', { description: 't' }, () => {
            const ex = currentExecution()!;
            for (const args of [
              ['', () => 1],
              ['x', 'not a function'],
            ] as const)
              try {
                ex.compensate(args[0], args[1] as never);
              } catch (error) {
                errors.push((error as Error).message);
              }
            return { content: [] };
          });
        },
      }),
      't',
      {},
    );
    expect(errors).toEqual([
      'compensate: a name of 1..180 characters, got ',
      'compensate x: expected a function',
    ]);
  });
});
