import { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import { topicNames } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// The liveness a Kubernetes probe reads (`/healthz` of `tidemark worker`): a worker whose read loop
// stopped coming back is not alive, so it is restarted and its partitions move on.

it('a partition whose read stops coming back makes the worker not alive; a quiet one does not', async () => {
  const log = new EmbeddedLog({ path: ':memory:' });
  const topics = topicNames('live.');
  log.provisionTopics(topics, { partitions: 2 });
  let hang = false;
  const held: Array<() => void> = [];
  const fetch = (...args: unknown[]) =>
    (log.fetch as (...a: unknown[]) => unknown).apply(log, args);
  // The log as the worker sees it: fetches of `requests` never return once `hang` is set.
  const port = new Proxy(log, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key === 'fetch')
        return (topic: string, ...rest: unknown[]) =>
          hang && topic === topics.requests
            ? new Promise((resolve) => held.push(() => resolve(fetch(topic, ...rest))))
            : fetch(topic, ...rest);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  const worker = new Worker({
    log: port,
    topics,
    modules: [counting],
    pollMs: 50,
    // Wide enough that a loaded machine's pauses are not taken for a stall.
    stallMs: 1_500,
    onProblem: () => {},
  });
  await worker.start();
  onTestFinished(async () => {
    hang = false;
    for (const release of held.splice(0)) release();
    await worker.stop().catch(() => undefined);
    await log.close();
  });
  while (worker.assignedPartitions.length < 2)
    await new Promise((resolve) => setTimeout(resolve, 20));
  // Idle for longer than stallMs: long polls keep coming back, the worker is alive.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  expect(worker.liveness()).toEqual({ alive: true, stalled: [] });
  // Its reads hang: once they have hung past stallMs, it says so (polled, not timed).
  hang = true;
  const deadline = Date.now() + 15_000;
  while (worker.liveness().stalled.length < 2 && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 50));
  expect(worker.liveness()).toEqual({ alive: false, stalled: [0, 1] });
});

it('readers waiting for a call slot (every slot busy with long calls) are not a stall', async () => {
  const stack = await embeddedStack({
    worker: { maxConcurrentCalls: 1, stallMs: 1_000, pollMs: 50 },
  });
  onTestFinished(() => stack.stop());
  const client = new RawMcpClient(stack.gateways[0]!.url);
  await client.initialize();
  const long = client.callCount(1, 80, 50); // 4 s in the one slot
  await new Promise((resolve) => setTimeout(resolve, 200));
  const queued = client.callCount(2, 1, 0); // its reader waits for the one slot
  await new Promise((resolve) => setTimeout(resolve, 2_000)); // twice stallMs
  expect(stack.worker.liveness()).toEqual({ alive: true, stalled: [] });
  await Promise.all([long, queued]);
});
