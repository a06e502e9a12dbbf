import { createHash } from 'node:crypto';
import { defineToolModule } from '@tidemark/tools';
import type { Worker } from '@tidemark/worker';
import { expect, vi } from 'vitest';
import * as z from 'zod';
import { RawMcpClient, readSse } from '@tidemark/fixtures/sse';
import { pollTask, rpc, sseMessages } from '@tidemark/fixtures/task-client';

// What does not fit one record of the log (issue #56), on whichever log: a tool's answer larger
// than one record of `events` carries (4 MiB) is written in parts and arrives whole — on either
// lane, through another gateway, after a resume; one larger than the worker's `maxResultBytes`
// (16 MiB) is answered at once with an error that names its size and the limit, never written
// and retried forever (on Kafka the session lane held the call, its slot and its partition's
// commit), and the next call is served.

/**
 * A text of `mib` MiB that shows any misplaced part: each 16-byte line says where it is.
 * The same text every time, so a test compares digests.
 */
export function bigText(mib: number): string {
  const lines: string[] = [];
  for (let at = 0; at < mib * 1024 * 1024; at += 16)
    lines.push(`${at.toString(16).padStart(15, '0')}\n`);
  return lines.join('');
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** `big {mib, notify?}`: says a log message first (when asked), then answers with `bigText(mib)`. */
export const bigTool = defineToolModule({
  name: 'big',
  register(server) {
    server.registerTool(
      'big',
      {
        inputSchema: z.object({
          mib: z.number(),
          notify: z.boolean().default(false),
          /** A large argument: its digest is the answer (a request as large as a body may be). */
          payload: z.string().optional(),
        }),
      },
      async ({ mib, notify, payload }, ctx) => {
        if (payload !== undefined)
          return { content: [{ type: 'text', text: `${payload.length} ${digest(payload)}` }] };
        if (notify)
          await ctx.mcpReq.notify({
            method: 'notifications/message',
            params: { level: 'info', data: 'the big answer follows' },
          });
        // A moment for the client to take the first event and drop its stream.
        if (notify) await new Promise((resolve) => setTimeout(resolve, 300));
        return { content: [{ type: 'text', text: bigText(mib) }] };
      },
    );
  },
  // A client that takes tasks gets one: its outcome is read by `tasks/get` and `tasks/stream`.
  taskSupport: { big: 'optional' },
});

const TOO_LARGE = /the answer is \d+ bytes, more than the 16777216 this server carries/;

/** The final message of call `id` on a session-lane stream, and the ids of the events before it. */
async function finalOf(
  response: Response,
  id: number,
  stopAfterFirst = false,
): Promise<{ final: Record<string, unknown> | undefined; ids: string[] }> {
  const ids: string[] = [];
  let final: Record<string, unknown> | undefined;
  const controller = new AbortController();
  await readSse(
    response,
    (event) => {
      if (event.id !== undefined) ids.push(event.id);
      if (event.data === '') return;
      const message = JSON.parse(event.data) as Record<string, unknown>;
      if (stopAfterFirst) return false;
      if (message['id'] !== id) return;
      final = message;
      return false;
    },
    controller,
  );
  return { final, ids };
}

const textOf = (message: Record<string, unknown> | undefined) =>
  ((message?.['result'] as { content?: Array<{ text?: string }> } | undefined)?.content ?? [])[0]
    ?.text ?? '';

export async function largeAnswersArriveWhole(
  urls: readonly string[],
  worker: Worker,
): Promise<void> {
  const [url, other] = urls as [string, string];
  const expected = digest(bigText(10));
  const free = () =>
    vi.waitFor(() => expect(worker.slotReport().calls.busy).toBe(0), { timeout: 5_000 });
  // Stateless (2026-07-28): 10 MiB, in three records, answered whole.
  const stateless = await rpc(
    url,
    'tools/call',
    { name: 'big', arguments: { mib: 10 } },
    { tasks: false },
  );
  expect(stateless.body.error).toBeUndefined();
  expect(digest(textOf(stateless.body as Record<string, unknown>))).toBe(expected);
  // Session lane (2025-11-25): the stream dropped after the first event, resumed on the other
  // gateway, which reads the answer's parts back and sends it whole.
  const client = new RawMcpClient(url);
  await client.initialize();
  const call = {
    jsonrpc: '2.0',
    id: 9,
    method: 'tools/call',
    params: { name: 'big', arguments: { mib: 10, notify: true } },
  };
  const first = await finalOf(await client.post(call), 9, true);
  // The priming event's id, then the log message's.
  expect(first.ids.length).toBeGreaterThan(0);
  const elsewhere = new RawMcpClient(other, client.session);
  const resumed = await finalOf(await elsewhere.resume(first.ids.at(-1)!), 9);
  expect(resumed.final?.['error']).toBeUndefined();
  expect(digest(textOf(resumed.final))).toBe(expected);
  // Past the limit: an error that names the size and the limit, on both lanes, at once.
  const startedAt = Date.now();
  const refused = await rpc(
    url,
    'tools/call',
    { name: 'big', arguments: { mib: 20 } },
    { tasks: false },
  );
  expect(refused.body.error?.code).toBe(-32603);
  expect(refused.body.error?.message).toMatch(TOO_LARGE);
  expect(refused.body.error?.data).toMatchObject({ limit: 16 * 1024 * 1024 });
  console.log(`a 20 MiB answer refused in ${Date.now() - startedAt} ms`);
  const over = await finalOf(
    await client.post({ ...call, id: 10, params: { name: 'big', arguments: { mib: 20 } } }),
    10,
  );
  expect((over.final?.['error'] as { message?: string } | undefined)?.message).toMatch(TOO_LARGE);
  await free();
  const { messages } = await client.callCount(11, 2, 0);
  expect(messages.at(-1)).toMatchObject({ id: 11, result: { content: [{ type: 'text' }] } });
}

/**
 * A task's 10 MiB outcome: too large for its stream's head, which keeps the status before it, so
 * `tasks/get` on another gateway reads it back from the log, and `tasks/stream` carries it whole.
 */
export async function largeTaskResultsArriveWhole(urls: readonly string[]): Promise<void> {
  const [url, other] = urls as [string, string];
  const expected = digest(bigText(10));
  const created = await rpc(url, 'tools/call', { name: 'big', arguments: { mib: 10 } });
  const taskId = String(created.body.result?.['taskId']);
  const done = await pollTask([other, url], taskId, ['completed'], { intervalMs: 100 });
  expect(digest(textOf(done))).toBe(expected);
  const streamed = await rpc(other, 'tasks/stream', { taskId });
  const terminal = sseMessages(streamed.text)
    .map((m) => m['params'] as { type?: string; data?: Record<string, unknown> } | undefined)
    .find((event) => event?.type === 'io.tidemark/terminal');
  expect(digest(textOf(terminal?.data))).toBe(expected);
}

/**
 * A request as large as a body may be (4 MiB, `--max-body-bytes`) becomes one record with its
 * headers and seal, within the topics' `max.message.bytes` (4 MiB + 64 KiB), and the tool gets it
 * whole, on either lane; a byte more is refused (413) before anything is written.
 */
export async function largeRequestsAreCarried(url: string): Promise<void> {
  const payload = 'x'.repeat(4 * 1024 * 1024 - 1024);
  const expected = `${payload.length} ${digest(payload)}`;
  const stateless = await rpc(
    url,
    'tools/call',
    { name: 'big', arguments: { mib: 0, payload } },
    { tasks: false },
  );
  expect(stateless.body.error).toBeUndefined();
  expect(textOf(stateless.body as Record<string, unknown>)).toBe(expected);
  const client = new RawMcpClient(url);
  await client.initialize();
  const call = {
    jsonrpc: '2.0',
    id: 20,
    method: 'tools/call',
    params: { name: 'big', arguments: { mib: 0, payload: payload.slice(0, -200) } },
  };
  const { final } = await finalOf(await client.post(call), 20);
  expect(textOf(final)).toBe(`${payload.length - 200} ${digest(payload.slice(0, -200))}`);
  const over = await rpc(
    url,
    'tools/call',
    { name: 'big', arguments: { mib: 0, payload: `${payload}${'x'.repeat(1024)}` } },
    { tasks: false },
  );
  expect(over.status).toBe(413);
}
