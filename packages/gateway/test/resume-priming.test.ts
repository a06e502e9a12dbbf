import counting from '@tidemark/examples/counting';
import { Worker } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient, readSse, type SseEvent } from '@tidemark/fixtures/sse';

// A resumed stream starts with an id (2025-11-25 clients): the SDK's client tracks only ids it
// receives on a stream, so a resumed stream cut before its next event reconnected without
// `Last-Event-ID` (typescript-sdk#2499) and the call hung. With the priming id it resumes again.

/** Opens a resume and reads its events until `stop` says so (then drops it). */
async function resumeUntil(
  client: RawMcpClient,
  lastEventId: string,
  stop: (events: SseEvent[]) => boolean,
): Promise<SseEvent[]> {
  const controller = new AbortController();
  const events: SseEvent[] = [];
  const response = await client.resume(lastEventId, controller.signal);
  expect(response.status).toBe(200);
  await readSse(
    response,
    (event) => {
      events.push(event);
      return !stop(events);
    },
    controller,
  );
  return events;
}

const messagesOf = (events: SseEvent[]) =>
  events.filter((e) => e.data !== '').map((e) => JSON.parse(e.data) as Record<string, unknown>);

describe('resumed streams are primed with an id', () => {
  it('a continuation starts with the claim itself: cut before the next event, the same id resumes exactly', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const first = await client.callCount(1, 10, 40, 3);
    const claim = first.ids.at(-1)!;
    const primed = await resumeUntil(client, claim, (events) => events.length >= 1);
    expect(primed).toEqual([{ id: claim, data: '' }]);
    // The client reconnects with what it tracked — the priming id — and misses nothing.
    const rest = await resumeUntil(client, primed[0]!.id!, (events) =>
      messagesOf(events).some((m) => 'result' in m),
    );
    const progress = messagesOf(rest).flatMap((m) =>
      m['method'] === 'notifications/progress'
        ? [(m['params'] as { progress: number }).progress]
        : [],
    );
    expect(progress).toEqual([4, 5, 6, 7, 8, 9, 10]);
  });

  it('a reset primes the position before the generation it replays: cut after the reset, that id resumes the whole new execution', async () => {
    // No handoff: the stopping worker leaves its call unfinished.
    const stack = await embeddedStack({ worker: { handoffTimeoutMs: 0 } });
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const first = await client.callCount(2, 20, 40, 3);
    await stack.worker.stop(); // the call stops unfinished
    const executions: number[] = [];
    const second = new Worker({
      log: stack.log,
      topics: stack.topics,
      modules: [counting],
      pollMs: 20,
      onProblem: () => {},
      onExecution: (e) => void executions.push(e.attempt),
    });
    await second.start();
    onTestFinished(() => second.stop());
    while (!executions.includes(2)) await new Promise((resolve) => setTimeout(resolve, 20));
    const reset = await resumeUntil(client, first.ids.at(-1)!, (events) => events.length >= 2);
    expect(messagesOf(reset)[0]).toMatchObject({ method: 'notifications/tidemark/reset' });
    expect(reset[1]).toEqual({ id: expect.any(String) as unknown, data: '' });
    const rest = await resumeUntil(client, reset[1]!.id!, (events) =>
      messagesOf(events).some((m) => 'result' in m),
    );
    const messages = messagesOf(rest);
    expect(messages.some((m) => m['method'] === 'notifications/tidemark/reset')).toBe(false);
    const progress = messages.flatMap((m) =>
      m['method'] === 'notifications/progress'
        ? [(m['params'] as { progress: number }).progress]
        : [],
    );
    expect(progress).toHaveLength(20);
    expect(progress[0]).toBeGreaterThan(3);
    expect(messages.at(-1)).toMatchObject({
      result: {
        content: [{ type: 'text', text: Array.from({ length: 20 }, (_, i) => i + 1).join(',') }],
      },
    });
  });

  it('a reset after its events were deleted while the call waits primes the record before what is held: cut before the next event, that id resumes the rest exactly', async () => {
    const stack = await embeddedStack({ partitions: 1 });
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    // Counts to 4, a number every 1.5 s; the client takes the first and goes away.
    const first = await client.callCount(4, 4, 1_500, 1);
    // Its second number is written while the client is away, then deleted (retention, an
    // operator): nothing after the client's id is held, and the call waits for its third.
    const highWatermark = async () =>
      (await stack.log.offsets(stack.topics.events, 0)).highWatermark;
    const away = await highWatermark();
    await expect.poll(highWatermark, { timeout: 5_000 }).toBeGreaterThan(away);
    await stack.log.deleteRecordsBefore(stack.topics.events, 0, await highWatermark());
    const reset = await resumeUntil(client, first.ids.at(-1)!, (events) => events.length >= 2);
    expect(messagesOf(reset)[0]).toMatchObject({
      method: 'notifications/tidemark/reset',
      params: { reason: 'evicted' },
    });
    expect(reset[1]).toEqual({ id: expect.any(String) as unknown, data: '' });
    // Cut before the next event: the client resumes with the priming id and gets the rest — with
    // one more explicit reset when the stored head had not yet seen the deleted number (it cannot
    // say which seq came last), never a silent gap.
    const rest = await resumeUntil(client, reset[1]!.id!, (events) =>
      messagesOf(events).some((m) => 'result' in m),
    );
    const messages = messagesOf(rest);
    const resets = messages.filter((m) => m['method'] === 'notifications/tidemark/reset');
    expect(resets.length).toBeLessThanOrEqual(1);
    const progress = messages.flatMap((m) =>
      m['method'] === 'notifications/progress'
        ? [(m['params'] as { progress: number }).progress]
        : [],
    );
    expect(progress).toEqual([3, 4]);
    expect(messages.at(-1)).toMatchObject({
      result: { content: [{ type: 'text', text: '1,2,3,4' }] },
    });
  });
});
