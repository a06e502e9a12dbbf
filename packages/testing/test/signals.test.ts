import { approvalsModule } from '@tidemark/examples/approvals';
import { currentExecution, defineToolModule } from '@tidemark/tools';
import { runTool } from '@tidemark/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';

// Signals (`ex.signal`) in the tool authors' harness: the test answers them (`signals`) as a POST
// to their URL would; no answer ends the wait as an expiry does.

function toolOf(body: () => Promise<unknown>) {
  return defineToolModule({
    name: 'signals-test',
    register: (server) => {
      server.registerTool('t', { description: 'test' }, async () => ({
        content: [{ type: 'text' as const, text: JSON.stringify(await body()) }],
      }));
    },
  });
}

describe('signals in runTool', () => {
  it('the approval example: approved, the transfer made once; unanswered, refused as expired', async () => {
    const transfers: string[] = [];
    const module = approvalsModule({
      notify: () => undefined,
      transfer: ({ to }) => (transfers.push(to), `tr-${to}`),
    });
    const args = { to: 'bob', amountCents: 500, approver: 'ana@example.com' };
    const asked: string[] = [];
    const run = await runTool(module, 'transfer', args, {
      signals: ({ name, url }) => (asked.push(`${name} ${url}`), { approved: true }),
    });
    expect(run.result.structuredContent).toMatchObject({ approved: true, transferId: 'tr-bob' });
    expect(asked).toEqual(['approval http://tidemark.test/mcp/signals/approval']);
    expect(run.steps.map((s) => s.step)).toEqual([
      'signal approval',
      'ask',
      'decision',
      'transfer',
    ]);
    const unanswered = await runTool(module, 'transfer', args);
    expect(unanswered.result.structuredContent).toMatchObject({ approved: false, expired: true });
    expect(transfers).toEqual(['bob']);
  });

  it('an answer its schema refuses, a signal inside a step, or a bad name is a clear error', async () => {
    const schema = z.object({ ok: z.boolean() });
    const wrong = await runTool(
      toolOf(async () => (await currentExecution()!.signal('s', { schema })).wait()),
      't',
      {},
      { signals: () => ({ ok: 'yes' }) },
    );
    expect(wrong.result.isError).toBe(true);
    expect(JSON.stringify(wrong.result.content)).toContain('a value its schema takes');
    const inStep = await runTool(
      toolOf(() => currentExecution()!.step('outer', () => currentExecution()!.signal('s'))),
      't',
      {},
    );
    expect(JSON.stringify(inStep.result.content)).toContain('outside any step');
    const badName = await runTool(
      toolOf(() => currentExecution()!.signal('')),
      't',
      {},
    );
    expect(JSON.stringify(badName.result.content)).toContain('signal name');
    const badTimeout = await runTool(
      toolOf(() => currentExecution()!.signal('s', { timeoutMs: -5 })),
      't',
      {},
    );
    expect(JSON.stringify(badTimeout.result.content)).toContain('timeoutMs');
    // A signal's answer is journaled under a name of the runtime's: no step may take it.
    const reserved = await runTool(
      toolOf(() => currentExecution()!.step('tidemark:answer s', () => 1)),
      't',
      {},
    );
    expect(JSON.stringify(reserved.result.content)).toContain("not starting with 'tidemark:'");
  });
});
