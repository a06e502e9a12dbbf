import counting from '@tidemark/examples/counting';
import { Worker, type ExecutionStart } from '@tidemark/worker';
import { expect, it, onTestFinished, vi } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';

// The poison-call bound on every lane (issue #57): a call whose worker keeps dying while it runs it
// — as if the call killed it — is answered with an error once it was started
// `maxExecutionsPerCall` times, instead of killing every worker in turn. The session lane and tasks
// had it; a plain stateless call (2026-07-28, no task) ran again on every takeover.

it('a stateless call that keeps dying with its worker is answered with an error after maxExecutionsPerCall, not run again', async () => {
  const executions: ExecutionStart[] = [];
  const limits = { maxExecutionsPerCall: 1, handoffTimeoutMs: 0 };
  const stack = await embeddedStack({
    partitions: 1,
    worker: { ...limits, onExecution: (e) => executions.push(e) },
  });
  onTestFinished(() => stack.stop());
  const answering = rpc(
    stack.gateways[0]!.url,
    'tools/call',
    { name: 'count', arguments: { to: 1_000, delayMs: 20 } },
    { tasks: false },
  );
  await vi.waitFor(() => expect(executions).toHaveLength(1));
  await stack.worker.stop(); // as if the call had killed it
  const next = new Worker({
    log: stack.log,
    topics: stack.topics,
    modules: [counting],
    pollMs: 20,
    keyring: stack.keyring,
    ...limits,
    onExecution: (e) => executions.push(e),
  });
  await next.start();
  onTestFinished(() => next.stop());
  const answer = await answering;
  expect(answer.body.error).toMatchObject({
    code: -32603,
    message:
      'Internal error: the call was started 1 times without finishing (limit 1); it is not run again',
  });
  expect(executions.map((e) => e.cause)).toEqual(['first']);
});
