import { EmbeddedLog } from '@tidemark/embedded-log';
import { HandoffNotices, StreamHeadStore, StreamWriter } from '@tidemark/log';
import {
  newSessionId,
  newWorkerEpoch,
  requestStreamId,
  topicNames,
  type StreamHead,
} from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Handoffs } from '../src/calls/handoff.js';

// The next owner's side of a handoff (`Handoffs.settle`) over a log two workers share: worker A
// runs a call on partition 0 and gives the partition to worker B, which must not run the call
// again while A still runs it.

function setUp() {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  const topics = topicNames('t.');
  log.provisionTopics(topics, { partitions: 1 });
  const a = newWorkerEpoch();
  const session = newSessionId();
  const stream = requestStreamId(1);
  // Each worker its own stores, as two processes have.
  const notices = new HandoffNotices({ port: log, topics });
  const writer = new StreamWriter({ port: log, topics, epoch: a, partitionCount: 1 });
  const heads = new StreamHeadStore({ port: log, topics, partitionCount: 1 });
  const handoffs = new Handoffs({
    notices: new HandoffNotices({ port: log, topics }),
    heads,
    epoch: newWorkerEpoch(),
    timeoutMs: 60_000,
    onProblem: (problem) => expect.fail(problem),
  });
  const settle = async () => {
    handoffs.assigned(0);
    const head = await heads.decided(session, stream);
    let settled: StreamHead | undefined;
    const settling = handoffs
      .settle(session, stream, head, () => false)
      .then((decided) => {
        settled = decided;
        return decided;
      });
    return { settling, settledYet: () => settled !== undefined };
  };
  const final = { jsonrpc: '2.0', id: 1, result: { content: [] } };
  return { a, session, stream, notices, writer, settle, final };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Handoffs: the next owner waits for a call its old owner still runs', () => {
  it('a release from an earlier handoff of the same worker does not end the wait for a call it started since', async () => {
    const { a, session, stream, notices, writer, settle, final } = setUp();
    // A gave partition 0 away once and said it was done there …
    await notices.release(0, a);
    // … got it back, and started the call; now it gives the partition to B, its notice not yet
    // written when B first looks (a slow write under load).
    const execution = await writer.begin(session, stream, { previous: undefined });
    const { settling, settledYet } = await settle();
    await sleep(300);
    await notices.announce(0, a, Date.now() + 60_000);
    await sleep(1_500);
    expect(settledYet()).toBe(false);
    await execution.finish(final);
    // B decides the request by the call's end: done, not run a second time.
    expect((await settling)?.terminal).toBeDefined();
  });

  it('a release written after the call started ends the wait at once', async () => {
    const { a, session, stream, notices, writer, settle, final } = setUp();
    const execution = await writer.begin(session, stream, { previous: undefined });
    await notices.announce(0, a, Date.now() + 60_000);
    // The call stopped with A's handoff (it outlived it): A says nothing of it runs any more.
    await notices.release(0, a);
    const { settling } = await settle();
    const decided = await settling;
    expect(decided?.generation.epoch).toBe(a);
    expect(decided?.terminal).toBeUndefined();
    await execution.finish(final);
  });
});
