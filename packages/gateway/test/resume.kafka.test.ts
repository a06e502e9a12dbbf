import type { AddressInfo } from 'node:net';
import counting from '@tidemark/examples/counting';
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { createKeyring, encodeEventId, verifyEventId, type SessionId } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { describe, expect, inject, it, type TestContext } from 'vitest';
import { callEnded, messages, whenLogged } from '@tidemark/fixtures/log-wait';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

const brokers = inject('kafkaBrokers');
const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(9) } });

async function setup(ctx: TestContext) {
  const { prefix, names } = await provisionTestTopics(ctx, brokers, {
    label: 'resume',
    partitions: 1,
  });
  const log = new KafkaLog({ brokers, groupSessionTimeoutMs: 6_000 });
  const workers: Worker[] = [];
  const startWorker = async (onExecution?: (e: { stream: string; attempt: number }) => void) => {
    const worker = new Worker({
      log,
      topics: names,
      modules: [counting],
      group: `${prefix}workers`,
      pollMs: 100,
      commitIntervalMs: 200,
      // No handoff: a stopped worker leaves its call unfinished, to be run again (the resets here).
      handoffTimeoutMs: 0,
      onProblem: () => {},
      ...(onExecution === undefined ? {} : { onExecution }),
    });
    await worker.start();
    workers.push(worker);
    const deadline = Date.now() + 30_000;
    while (worker.assignedPartitions.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    return worker;
  };
  const gateway = await createGateway({
    log,
    topics: names,
    keyring,
    tailWaitMs: 100,
    onError: () => {},
  });
  const server = await gateway.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  ctx.onTestFinished(async () => {
    // Idle kept-alive connections closed at once: no request is coming (a drain waits ~4 s).
    const drained = gateway.drain();
    server.closeIdleConnections();
    await drained;
    for (const worker of workers) await worker.stop();
    await log.close();
  });
  return { log, names, url, startWorker };
}

/** Resumes with `lastEventId` and reads to the end: the first event's reset (if any), progress after it, the final result. */
async function resumeToEnd(client: RawMcpClient, lastEventId: string) {
  const response = await client.resume(lastEventId);
  const messages: Array<Record<string, unknown>> = [];
  if (response.status !== 200)
    return {
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
      messages,
    };
  await readSse(response, (event) => {
    if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
  });
  return { status: 200, body: undefined, messages };
}

function summary(messages: Array<Record<string, unknown>>) {
  const resets = messages
    .filter((m) => m['method'] === 'notifications/tidemark/reset')
    .map((m) => (m['params'] as { reason: string }).reason);
  const last = messages.map((m) => m['method']).lastIndexOf('notifications/tidemark/reset');
  const progress = messages
    .slice(last + 1)
    .flatMap((m) =>
      m['method'] === 'notifications/progress'
        ? [(m['params'] as { progress: number }).progress]
        : [],
    );
  const final = messages.at(-1)?.['result'] as { content: Array<{ text: string }> } | undefined;
  return { resets, progress, text: final?.content[0]?.text };
}

/**
 * A reset, then a whole re-run of a count to `n`: its progress continues the numbering past what
 * the first execution wrote (the client saw `seen` of it), so it never goes back on the wire.
 */
function expectRerun(seen: ReturnType<typeof summary>, n: number, alreadySeen: number) {
  expect(seen.resets).toEqual(['generation-superseded']);
  expect(seen.text).toBe(numbers(n).join(','));
  const base = seen.progress[0]! - 1;
  expect(base).toBeGreaterThanOrEqual(alreadySeen);
  expect(seen.progress).toEqual(numbers(n).map((i) => base + i));
}

const numbers = (n: number, from = 1) => Array.from({ length: n - from + 1 }, (_, i) => i + from);

describe('every row of the resume decision over HTTP, on the real broker', () => {
  it('resume: a dropped stream continues from the claim, exactly', async (ctx) => {
    const { url, startWorker } = await setup(ctx);
    await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = await client.callCount(1, 20, 30, 5);
    const rest = await resumeToEnd(client, first.ids.at(-1)!);
    expect(summary([...first.messages, ...rest.messages])).toEqual({
      resets: [],
      progress: numbers(20),
      text: numbers(20).join(','),
    });
  });

  it('invalid: a tampered id, another session’s id, a claim beyond the tail → 400 naming the reason', async (ctx) => {
    const { log, names, url, startWorker } = await setup(ctx);
    await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const { ids } = await client.callCount(1, 3, 0);
    const good = ids.at(-1)!;
    const tampered = `${good.slice(0, 10)}${good[10] === 'A' ? 'B' : 'A'}${good.slice(11)}`;
    expect(await resumeToEnd(client, tampered)).toMatchObject({
      status: 400,
      body: {
        error: { data: { reason: expect.stringMatching(/mac-mismatch|malformed/) as unknown } },
      },
    });
    const other = new RawMcpClient(url);
    await other.initialize();
    expect(await resumeToEnd(other, good)).toMatchObject({
      status: 400,
      body: { error: { data: { reason: 'other-session' } } },
    });
    const claim = verifyEventId(good, {
      session: client.session as SessionId,
      keyring,
      nowMs: Date.now(),
    });
    if (!claim.ok) throw new Error('the id the gateway minted does not verify');
    const { highWatermark } = await log.offsets(names.events, 0);
    const beyond = encodeEventId(
      {
        logIdentity: await log.identity(names.events),
        partition: 0,
        offset: highWatermark + 10n,
        generation: claim.claim.generation,
        seq: claim.claim.seq + 1,
        stream: claim.claim.stream,
      },
      client.session as SessionId,
      keyring,
    );
    const answer = await resumeToEnd(client, beyond);
    expect(answer).toMatchObject({
      status: 400,
      body: { error: { data: { reason: 'beyond-tail' } } },
    });
    // Offsets and watermarks stay in spans and logs: the answer names the reason only.
    expect(answer.body?.['error']).toEqual({
      code: -32600,
      message: 'Invalid Last-Event-ID: beyond-tail',
      data: { reason: 'beyond-tail' },
    });
  });

  it('reset (evicted): deleteRecords past the claim → a reset, then the stream from what is still held, and the exact result', async (ctx) => {
    const { log, names, url, startWorker } = await setup(ctx);
    await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = await client.callCount(2, 40, 50, 3);
    // The worker writes on past the claim (progress 3 of 40), so deleting up to the tail leaves a
    // hole after it: wait for ten more of its events.
    const { highWatermark } = await whenLogged(
      log,
      names.events,
      0,
      client.session,
      (streams) => messages(streams) >= 13,
    );
    await log.deleteRecordsBefore(names.events, 0, highWatermark);
    const rest = await resumeToEnd(client, first.ids.at(-1)!);
    const seen = summary(rest.messages);
    expect(seen.resets).toEqual(['evicted']);
    // After the reset: contiguous up to 40 from wherever the log still held the stream.
    expect(seen.progress).toEqual(numbers(40, seen.progress[0]));
    expect(seen.text).toBe(numbers(40).join(','));
  });

  it('reset (terminal-evicted): a finished stream whose events are gone → a reset, then the final response kept in its head', async (ctx) => {
    const { log, names, url, startWorker } = await setup(ctx);
    await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = await client.callCount(3, 8, 20, 2);
    const { highWatermark } = await whenLogged(log, names.events, 0, client.session, callEnded);
    await log.deleteRecordsBefore(names.events, 0, highWatermark);
    const rest = await resumeToEnd(client, first.ids.at(-1)!);
    expect(summary(rest.messages)).toEqual({
      resets: ['terminal-evicted'],
      progress: [],
      text: numbers(8).join(','),
    });
  });

  it('live reset: the call moves to another worker while the client is connected → a reset in the stream, then the new execution', async (ctx) => {
    const { url, startWorker } = await setup(ctx);
    const a = await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = await client.callCount(5, 30, 60, 5);
    const resumed = resumeToEnd(client, first.ids.at(-1)!);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await a.stop();
    await startWorker();
    const rest = await resumed;
    expectRerun(summary(rest.messages), 30, 5);
  });

  it('reset (generation-superseded): the call moved to another worker → a reset naming the new generation, then its whole execution', async (ctx) => {
    const { url, startWorker } = await setup(ctx);
    const a = await startWorker();
    const client = new RawMcpClient(url);
    await client.initialize();
    const first = await client.callCount(4, 30, 60, 5);
    await a.stop(); // the call stops unfinished; the group moves the partition
    let rerun = false;
    await startWorker((e) => (rerun ||= e.stream === 'n4' && e.attempt === 2));
    while (!rerun) await new Promise((resolve) => setTimeout(resolve, 20));
    const rest = await resumeToEnd(client, first.ids.at(-1)!);
    const reset = rest.messages[0];
    expect(reset).toMatchObject({
      method: 'notifications/tidemark/reset',
      params: {
        reason: 'generation-superseded',
        generation: expect.stringMatching(/^[0-9a-f]{20}\.2$/) as unknown,
      },
    });
    expectRerun(summary(rest.messages), 30, 5);
  });
});
