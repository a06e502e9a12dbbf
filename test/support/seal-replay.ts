import type { AddressInfo } from 'node:net';
import counting from '@tidemark/examples/counting';
import { createGateway } from '@tidemark/gateway';
import { readRange } from '@tidemark/log';
import { createKeyring, type LogPort, type LogRecord, type TopicNames } from '@tidemark/protocol';
import { Worker, type WorkerOptions } from '@tidemark/worker';
import { expect, vi } from 'vitest';
import { rpc } from './task-client.js';

// The replay of a sealed request record (security review M3), on whichever log: a stateless call
// runs once; its record, appended again by someone who can write `requests` — on its partition
// and on another — runs nothing again, and each copy is said as dropped.

export async function replayedRecordsRunOnce(
  log: WorkerOptions['log'] & { close(): Promise<void> },
  topics: TopicNames,
): Promise<void> {
  const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
  const problems: string[] = [];
  const executions: string[] = [];
  const worker = new Worker({
    log,
    topics,
    keyring,
    modules: [counting],
    pollMs: 20,
    onProblem: (problem) => problems.push(problem),
    onExecution: (event) => executions.push(event.stream),
  });
  await worker.start();
  const gateway = await createGateway({ log, topics, keyring, tailWaitMs: 50, onError: () => {} });
  const server = await gateway.listen(0, '127.0.0.1');
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const called = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2, delayMs: 0 } },
      { tasks: false },
    );
    expect(JSON.stringify(called.body.result)).toContain('1,2');
    expect(executions).toHaveLength(1);
    const original = await findCall(log, topics.requests);
    const copy = { key: original.key, value: original.value, headers: original.headers };
    const other = (original.partition + 1) % (await log.partitionCount(topics.requests));
    await log.append(topics.requests, [{ ...copy, partition: original.partition }]);
    await log.append(topics.requests, [{ ...copy, partition: other }]);
    await vi.waitFor(
      () => {
        const dropped = problems.filter((problem) => problem.includes('no valid gateway seal'));
        expect(dropped.map((problem) => /seal \(([\w-]+)/.exec(problem)?.[1]).sort()).toEqual([
          'other-partition',
          'replayed',
        ]);
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(executions).toHaveLength(1);
  } finally {
    const drained = gateway.drain();
    server.closeIdleConnections();
    await drained;
    await worker.stop();
    await log.close();
  }
}

/** The `tools/call` record the gateway wrote (the only one in `requests`). */
async function findCall(log: LogPort, topic: string): Promise<LogRecord> {
  for (let partition = 0; partition < (await log.partitionCount(topic)); partition++) {
    const { highWatermark } = await log.offsets(topic, partition);
    for await (const record of readRange(log, topic, partition, { from: 0n, until: highWatermark }))
      if (
        Buffer.from(record.value ?? [])
          .toString()
          .includes('"tools/call"')
      )
        return record;
  }
  throw new Error('no tools/call record in requests');
}
