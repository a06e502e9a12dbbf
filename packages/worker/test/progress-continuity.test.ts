import { EmbeddedLog } from '@tidemark/embedded-log';
import { StepJournal, StreamHeadStore, StreamWriter } from '@tidemark/log';
import {
  newSessionId,
  newWorkerEpoch,
  readStampedRecord,
  requestStreamId,
  topicNames,
  type StreamHead,
} from '@tidemark/protocol';
import { expect, it, onTestFinished } from 'vitest';
import { lastProgressInLog } from '../src/execution/progress-continuity.js';
import { CallExecution } from '../src/execution/call-execution.js';
import { SignalDesk } from '../src/execution/signal-desk.js';

// Progress continues across the generations of a call (a worker's death, a retry): each takeover
// continues from the highest progress written before it — also when the generation it takes over
// from died before writing any progress of its own.

const progress = (n: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n, total: 5 },
});

it('a generation that died before writing progress passes the numbering on to the next', async () => {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  const topics = topicNames('p.');
  log.provisionTopics(topics, { partitions: 1 });
  const base = { port: log, topics, partitionCount: 1 };
  const heads = new StreamHeadStore(base);
  const session = newSessionId();
  const stream = requestStreamId(1);
  // A worker (its own epoch) taking the stream over from the head it finds.
  const takeOver = (previous: StreamHead | undefined) =>
    CallExecution.begin(
      {
        serverInfo: { name: 'progress', version: '1' },
        modules: [],
        writer: new StreamWriter({ ...base, epoch: newWorkerEpoch() }),
        heads,
        steps: new StepJournal(base),
        signals: new SignalDesk(new StepJournal(base), undefined, 'http://127.0.0.1:3000/mcp'),
        maxStepBytes: 1024,
        sleepInMemoryMs: 60_000,
        maxExecutionsPerCall: 10,
        lastProgress: (s, head, until) => lastProgressInLog(log, topics.events, 0, s, head, until),
      },
      { owner: session, stream },
      previous,
      { stopped: () => false },
    );

  const first = await takeOver(undefined);
  for (const n of [1, 2, 3]) await first.send(progress(n));
  await takeOver(await heads.get(session, stream)); // dies at once: no progress of its own
  const third = await takeOver(await heads.get(session, stream));
  await third.send(progress(1));
  await third.retry(); // and a retry of the third continues from what it wrote
  await third.send(progress(1));

  const written = (await log.fetch(topics.events, 0, 0n)).records
    .map((r) => readStampedRecord(r)?.payload as ReturnType<typeof progress> | undefined)
    .filter((p) => p !== undefined)
    .map((p) => [p.params.progress, p.params.total]);
  expect(written).toEqual([
    [1, 5],
    [2, 5],
    [3, 5],
    [4, 8],
    [5, 9],
  ]);
  expect((await heads.get(session, stream))?.progressBase).toBe(4);
});
