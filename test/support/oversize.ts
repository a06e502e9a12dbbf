import { defineToolModule } from '@tidemark/tools';
import type { Worker } from '@tidemark/worker';
import { expect, vi } from 'vitest';
import * as z from 'zod';
import { RawMcpClient, readSse } from './sse.js';
import { rpc } from './task-client.js';

// What does not fit one record of the log (issue #56), on whichever log: a tool's answer larger
// than what one record of `events` carries is answered at once with an error that names its size
// and the limit — on either lane — never written and retried forever (on Kafka the session lane
// held the call, its slot and its partition's commit; the stateless lane said only "internal
// error"), and the next call is served.

/** `big {mib}`: answers with a text of `mib` MiB. */
export const bigTool = defineToolModule({
  name: 'big',
  register(server) {
    server.registerTool('big', { inputSchema: z.object({ mib: z.number() }) }, ({ mib }) => ({
      content: [{ type: 'text', text: 'x'.repeat(mib * 1024 * 1024) }],
    }));
  },
});

const TOO_LARGE = /the answer is \d+ bytes, more than the 4194304 one record of the log carries/;

export async function tooLargeAnswersAreErrors(url: string, worker: Worker): Promise<void> {
  const free = () =>
    vi.waitFor(() => expect(worker.slotReport().calls.busy).toBe(0), { timeout: 5_000 });
  // Stateless (2026-07-28).
  const answer = await rpc(
    url,
    'tools/call',
    { name: 'big', arguments: { mib: 10 } },
    { tasks: false },
  );
  expect(answer.body.error?.code).toBe(-32603);
  expect(answer.body.error?.message).toMatch(TOO_LARGE);
  expect(answer.body.error?.data).toMatchObject({ limit: 4 * 1024 * 1024 });
  await free();
  // Session lane (2025-11-25): the call ends with the error, then the session goes on.
  const client = new RawMcpClient(url);
  await client.initialize();
  const response = await client.post({
    jsonrpc: '2.0',
    id: 9,
    method: 'tools/call',
    params: { name: 'big', arguments: { mib: 10 } },
  });
  let final: Record<string, unknown> | undefined;
  await readSse(response, (event) => {
    if (event.data === '') return;
    const message = JSON.parse(event.data) as Record<string, unknown>;
    if (message['id'] !== 9) return;
    final = message;
    return false;
  });
  const error = final?.['error'] as { code: number; message: string } | undefined;
  expect(error?.code).toBe(-32603);
  expect(error?.message).toMatch(TOO_LARGE);
  await free();
  const { messages } = await client.callCount(10, 2, 0);
  expect(messages.at(-1)).toMatchObject({ id: 10, result: { content: [{ type: 'text' }] } });
}
