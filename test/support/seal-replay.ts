import counting from '@tidemark/examples/counting';
import { readRange } from '@tidemark/log';
import type { LogPort, LogRecord, TopicNames } from '@tidemark/protocol';
import type { WorkerOptions } from '@tidemark/worker';
import { expect, vi } from 'vitest';
import { startLogStack } from './log-stack.js';
import { rpc } from './task-client.js';

// The replay of a sealed request record (security review M3), on whichever log: a stateless call
// runs once; its record, appended again by someone who can write `requests` — on its partition
// and on another — runs nothing again, and each copy is said as dropped.

export async function replayedRecordsRunOnce(
  log: WorkerOptions['log'] & { close(): Promise<void> },
  topics: TopicNames,
): Promise<void> {
  const problems: string[] = [];
  const executions: string[] = [];
  const stack = await startLogStack(log, topics, [counting], {
    onProblem: (problem) => problems.push(problem),
    onExecution: (event) => executions.push(event.stream),
  });
  try {
    const called = await rpc(
      stack.url,
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
    await stack.stop();
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
