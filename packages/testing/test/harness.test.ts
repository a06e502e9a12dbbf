import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { currentExecution, defineToolModule, RetryableToolError } from '@tidemark/tools';
import { openToolSession, runTool } from '@tidemark/testing';
import { describe, expect, it, onTestFinished, vi } from 'vitest';

describe('the tool test harness, on the example modules', () => {
  it('runs count with one progress notification per number and the exact result', async () => {
    const run = await runTool(counting, 'count', { to: 5, delayMs: 0 });
    expect(run.progress.map((p) => [p.progress, p.total, p.message])).toEqual(
      [1, 2, 3, 4, 5].map((i) => [i, 5, String(i)]),
    );
    expect(run.result.content).toEqual([{ type: 'text', text: '1,2,3,4,5' }]);
    expect(run.result.structuredContent).toEqual({ numbers: [1, 2, 3, 4, 5] });
    expect(run.attempts).toBe(1);
  });

  it('retries flaky_count as new executions until it succeeds', async () => {
    const run = await runTool(counting, 'flaky_count', {
      to: 4,
      delayMs: 0,
      failAt: 3,
      failAttempts: 2,
    });
    expect(run.attempts).toBe(3);
    expect(run.result.isError).not.toBe(true);
    expect(run.result.content).toEqual([{ type: 'text', text: '1,2,3,4' }]);
    // Each failed attempt got as far as 2 before failing at 3.
    expect(run.progress.map((p) => p.progress)).toEqual([1, 2, 1, 2, 1, 2, 3, 4]);
  });

  it('gives up after the policy’s attempts and reports the error as a tool error', async () => {
    const run = await runTool(counting, 'flaky_count', {
      to: 3,
      delayMs: 0,
      failAt: 2,
      failAttempts: 9,
    });
    expect(run.attempts).toBe(5);
    expect(run.result.isError).toBe(true);
  });

  it('cancels a running tool through its signal', async () => {
    const controller = new AbortController();
    // A count that would run for half an hour: only the abort can end it (before the test's timeout).
    const running = runTool(
      counting,
      'count',
      { to: 100_000, delayMs: 20 },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 100);
    await expect(running).rejects.toThrow();
  }, 30_000);

  it('answers elicitation from the test, accepting or declining', async () => {
    const accepted = await runTool(
      interactive,
      'confirm_delete',
      { path: '/tmp/a' },
      { elicit: () => ({ action: 'accept', content: { confirm: true } }) },
    );
    expect(accepted.result.content).toEqual([{ type: 'text', text: 'deleted /tmp/a' }]);
    const declined = await runTool(interactive, 'confirm_delete', { path: '/tmp/a' });
    expect(declined.result.content).toEqual([{ type: 'text', text: 'kept /tmp/a' }]);
  });

  it('reports the progress of a long job', async () => {
    const run = await runTool(interactive, 'export_report', { steps: 3, stepMs: 1 });
    expect(run.progress.map((p) => p.message)).toEqual([
      'exported part 1 of 3',
      'exported part 2 of 3',
      'exported part 3 of 3',
    ]);
  });
});

describe('time and cancellation', () => {
  it('a tool past its timeoutMs sees its signal abort, and the call ends with an error result naming the timeout', async () => {
    let sawAbort = false;
    const slow = defineToolModule({
      name: 'slow',
      toolTimeoutMs: { wait: 150 },
      register(server) {
        server.registerTool('wait', { description: 'waits until aborted' }, async (ctx) => {
          await new Promise<void>((resolve) =>
            ctx.mcpReq.signal.addEventListener('abort', () => resolve(), { once: true }),
          );
          sawAbort = true;
          return { content: [{ type: 'text', text: 'aborted' }] };
        });
      },
    });
    const run = await runTool(slow, 'wait', {});
    expect(run.result.isError).toBe(true);
    expect(run.result.content).toEqual([
      { type: 'text', text: 'Tool wait timed out after 150 ms' },
    ]);
    expect(sawAbort).toBe(true);
    expect(run.attempts).toBe(1);
  });

  it('a cancel during the backoff before a retry: the tool never runs again', async () => {
    let executions = 0;
    const failing = defineToolModule({
      name: 'failing',
      retry: { maxAttempts: 3, backoffMs: 1_500, maxBackoffMs: 1_500 },
      register(server) {
        server.registerTool('fail', { description: 'always fails, retryably' }, () => {
          executions++;
          throw new RetryableToolError('upstream busy');
        });
      },
    });
    const controller = new AbortController();
    const running = runTool(failing, 'fail', {}, { signal: controller.signal });
    await vi.waitFor(() => expect(executions).toBe(1));
    controller.abort();
    await expect(running).rejects.toThrow();
    // Past the longest backoff: a retry would have run by now.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(executions).toBe(1);
  });
});

describe('a session in the harness', () => {
  it('serves several calls, the client for everything else, and both lanes', async () => {
    const session = await openToolSession(counting);
    onTestFinished(() => session.close());
    const { tools } = await session.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['count', 'flaky_count']);
    const first = await session.call('count', { to: 2 });
    const second = await session.call('flaky_count', { to: 2, failAt: 2, failAttempts: 1 });
    expect(first.result.content).toEqual([{ type: 'text', text: '1,2' }]);
    expect(second.attempts).toBe(2);
    expect(second.executions.map((e) => [e.attempt, e.outcome])).toEqual([
      [1, 'retrying'],
      [2, 'ok'],
    ]);
  });

  it('asks the user with inputRequired on the stateless lane, and refuses push elicitation there', async () => {
    const elicit = () => ({ action: 'accept' as const, content: { confirm: true } });
    const asked = await runTool(
      interactive,
      'confirm_deploy',
      { env: 'prod' },
      { lane: 'stateless', elicit },
    );
    expect(asked.result.content).toEqual([{ type: 'text', text: 'deployed to prod' }]);
    const pushed = await runTool(
      interactive,
      'confirm_delete',
      { path: '/a' },
      { lane: 'stateless', elicit },
    );
    expect(pushed.result.isError).toBe(true);
  });

  it('a decline or a cancel ends confirm_deploy after one question, on both lanes', async () => {
    for (const lane of ['session', 'stateless'] as const)
      for (const action of ['decline', 'cancel'] as const) {
        let asked = 0;
        const run = await runTool(
          interactive,
          'confirm_deploy',
          { env: 'prod' },
          { lane, elicit: () => (asked++, { action }) },
        );
        const why = action === 'decline' ? 'declined' : 'cancelled';
        expect(run.result.content, `${lane} ${action}`).toEqual([
          { type: 'text', text: `not deployed to prod: ${why}` },
        ]);
        expect(asked, `${lane} ${action}`).toBe(1);
      }
  });

  it('gives the tool its logger, as the worker does, and hands the lines to the test', async () => {
    const logging = defineToolModule({
      name: 'logging',
      register(server) {
        server.registerTool('lookup', { description: 'logs what it does' }, () => {
          currentExecution()!.log!.info({ city: 'Oslo' }, 'looking up');
          currentExecution()!.log!.warn('slow upstream');
          return { content: [{ type: 'text', text: 'done' }] };
        });
      },
    });
    const run = await runTool(logging, 'lookup', {});
    expect(run.result.content).toEqual([{ type: 'text', text: 'done' }]);
    expect(run.logLines).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'looking up',
        city: 'Oslo',
        tool: 'lookup',
        attempt: 1,
      }),
      expect.objectContaining({ level: 'warn', msg: 'slow upstream', tool: 'lookup' }),
    ]);
  });

  it('answers sampling from the test', async () => {
    const summarizing = defineToolModule({
      name: 'summarizing',
      register(server) {
        server.registerTool(
          'summarize',
          { description: 'asks the client’s model' },
          async (ctx) => {
            const answer = await ctx.mcpReq.requestSampling({
              messages: [{ role: 'user', content: { type: 'text', text: 'summarize: a b c' } }],
              maxTokens: 10,
            });
            const content = Array.isArray(answer.content) ? answer.content[0] : answer.content;
            const text = content?.type === 'text' ? content.text : '?';
            return { content: [{ type: 'text', text }] };
          },
        );
      },
    });
    const run = await runTool(
      summarizing,
      'summarize',
      {},
      {
        sample: () => ({
          role: 'assistant',
          model: 'test',
          content: { type: 'text', text: 'abc' },
        }),
      },
    );
    expect(run.result.content).toEqual([{ type: 'text', text: 'abc' }]);
  });

  it('fails a call whose result the worker would not carry with the worker’s error, on both lanes', async () => {
    const echo = defineToolModule({
      name: 'echo-size',
      register(server) {
        server.registerTool('sized', {}, () => ({
          content: [{ type: 'text', text: 'y'.repeat(2_000) }],
        }));
      },
    });
    for (const lane of ['session', 'stateless'] as const) {
      const refused = runTool(echo, 'sized', {}, { lane, maxResultBytes: 1_000 });
      await expect(refused).rejects.toMatchObject({ code: -32603, data: { limit: 1_000 } });
      await expect(refused).rejects.toThrow(/the answer is \d+ bytes, more than the 1000/);
      expect((await runTool(echo, 'sized', {}, { lane })).result.content).toHaveLength(1);
    }
  });
});
