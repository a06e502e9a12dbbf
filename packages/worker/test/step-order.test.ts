import type { StepRecord } from '@tidemark/log';
import { ErrorCodes } from '@tidemark/protocol';
import type { Execution } from '@tidemark/tools';
import { runInExecution } from '@tidemark/tools/runtime';
import { describe, expect, it } from 'vitest';
import { memorySteps } from './memory-steps.js';

// Versions of a tool under a call in flight: each step is journaled with its place and the
// module's version; a replay whose code takes other steps there stops with journal-mismatch,
// naming both; `patched(id)` lets new code take a new path only for calls its journal allows.

/** One execution of a call over `journal`, as the code of module `version` runs it. */
function execution(journal: Map<string, StepRecord>, attempt: number, version: string) {
  const steps = memorySteps(journal, {
    replay: attempt > 1,
  });
  const { step, patched } = steps.forExecution(`e.${attempt}`);
  const ex = { moduleVersion: version, step, patched } as unknown as Execution;
  const ran: string[] = [];
  const take = (name: string) => step(name, () => void ran.push(name));
  return {
    ran,
    run: <T>(code: (ex: Execution, take: (name: string) => Promise<void>) => Promise<T>) =>
      runInExecution(ex, () => code(ex, take)),
  };
}

const oldCode = async (_: Execution, take: (name: string) => Promise<void>) => {
  await take('charge');
  await take('email');
};

describe('steps under a new version of the code', () => {
  it('journals each step with its place and the version that ran it', async () => {
    const journal = new Map<string, StepRecord>();
    await execution(journal, 1, '1.0').run(oldCode);
    expect(journal.get('charge')).toMatchObject({ index: 1, version: '1.0' });
    expect(journal.get('email')).toMatchObject({ index: 2, version: '1.0' });
  });

  it('steps in another order: journal-mismatch, naming both and their versions, before anything runs', async () => {
    const journal = new Map<string, StepRecord>();
    await execution(journal, 1, '1.0').run(oldCode);
    const next = execution(journal, 2, '2.0');
    const failed = next.run(async (_, take) => {
      await take('email');
      await take('charge');
    });
    await expect(failed).rejects.toMatchObject({ code: ErrorCodes.journalMismatch });
    await expect(failed).rejects.toThrow(
      "journal-mismatch: step 1 of this call is 'email' in this code (version 2.0), but its journal holds 'email' as step 2 (version 1.0)",
    );
    expect(next.ran).toEqual([]);
  });

  it('another step where the journal has one: journal-mismatch', async () => {
    const journal = new Map<string, StepRecord>();
    await execution(journal, 1, '1.0').run(oldCode);
    const failed = execution(journal, 2, '2.0').run(async (_, take) => {
      await take('charge');
      await take('sms');
    });
    await expect(failed).rejects.toThrow(
      "step 2 of this call is 'sms' in this code (version 2.0), but its journal holds 'email' there (version 1.0)",
    );
  });

  /** The new code: an sms where the old code sent an email, behind a patch. */
  const newCode = async (ex: Execution, take: (name: string) => Promise<void>) => {
    await take('charge');
    if (await ex.patched('receipt-by-sms')) await take('sms');
    else await take('email');
  };

  it('patched: a call the old code took past the change goes on the old path', async () => {
    const journal = new Map<string, StepRecord>();
    await execution(journal, 1, '1.0').run(oldCode);
    const next = execution(journal, 2, '2.0');
    await next.run(newCode);
    expect(next.ran).toEqual([]); // both replayed: charge, then email
    expect(journal.has('patch receipt-by-sms')).toBe(false);
  });

  it('patched: a call the old code had not taken that far, and a new call, take the new path — on every replay', async () => {
    const journal = new Map<string, StepRecord>();
    await execution(journal, 1, '1.0').run(async (_, take) => take('charge'));
    const upgraded = execution(journal, 2, '2.0');
    await upgraded.run(newCode);
    expect(upgraded.ran).toEqual(['sms']);
    const replay = execution(journal, 3, '2.0');
    await replay.run(newCode);
    expect(replay.ran).toEqual([]);

    const fresh = new Map<string, StepRecord>();
    const first = execution(fresh, 1, '2.0');
    await first.run(newCode);
    expect(first.ran).toEqual(['charge', 'sms']);
    expect(fresh.get('patch receipt-by-sms')).toMatchObject({ outcome: { ok: true } });
    expect(fresh.get('sms')).toMatchObject({ index: 2 });
  });
});
