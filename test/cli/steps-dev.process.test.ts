import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PretendPayments } from '@tidemark/examples/payments';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { describe, expect, it } from 'vitest';
import { connectResumingClient } from '@tidemark/fixtures/clients';
import { startDevServer } from '../support/dev-server.js';
import { pollTask, rpc, rpcResponse } from '@tidemark/fixtures/task-client';

// Durable steps on the embedded log: `tidemark dev` is killed (-9) right after a step was
// journaled and started again on the same data directory. The call runs again as a new generation
// and replays the step from the log: the pretend payment API (a file that outlives the process) is
// asked for the charge once. On each lane: session, stateless, task.

const BIN = fileURLToPath(new URL('../../packages/cli/dist/bin.js', import.meta.url));

/** `tidemark dev` serving the payments example on a data directory, the ledger beside it. */
async function devWithPayments() {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-steps-dev-'));
  const ledger = join(dir, 'payments.jsonl');
  const port = await reservePorts();
  const args = [
    ...[BIN, 'dev', '--port', String(port), '--data', join(dir, 'data')],
    ...['--tools', '@tidemark/examples/payments'],
  ];
  const env = { ...process.env, PAYMENTS_LEDGER: ledger };
  const start = () => startDevServer(process.execPath, args, { env });
  const first = start();
  return { first, url: await first.url, start, api: new PretendPayments(ledger) };
}

/** Resolves once the server logged the step as journaled (after its record is in the log). */
async function journaled(server: { output: () => string }, step: string): Promise<void> {
  await expect
    .poll(
      () =>
        server
          .output()
          .split('\n')
          .some((line) => line.includes('step journaled') && line.includes(`"step":"${step}"`)),
      { timeout: 30_000, interval: 20 },
    )
    .toBe(true);
}

function expectChargedOnce(api: PretendPayments, chargeId?: unknown): void {
  const entries = api.entries();
  expect(entries.filter((e) => e.kind === 'charge')).toEqual([
    expect.objectContaining({ fresh: true, ...(chargeId === undefined ? {} : { id: chargeId }) }),
  ]);
  expect(entries.filter((e) => e.kind === 'receipt')).toEqual([
    expect.objectContaining({ fresh: true }),
  ]);
}

const PAY = { to: 'ada@example.com', amountCents: 4200, holdMs: 1_000 };

describe('durable steps on the embedded log: kill -9 of tidemark dev after a step', () => {
  it('session lane: the restarted server replays the charge; the resuming client gets the same charge', async () => {
    const { first, url, start, api } = await devWithPayments();
    const client = await connectResumingClient(url, {
      name: 'steps-dev',
      initialDelayMs: 200,
      growFactor: 1.2,
      maxRetries: 100,
    });
    expect((client.transport as StreamableHTTPClientTransport).sessionId).toBeDefined();
    let second: ReturnType<typeof start> | undefined;
    const result = await client.callTool(
      { name: 'pay', arguments: PAY },
      {
        timeout: 120_000,
        onprogress: (p) => {
          if (p.progress !== 1 || second !== undefined) return;
          first.kill('SIGKILL');
          second = start();
        },
      },
    );
    expect(second).toBeDefined();
    expect(result.isError).not.toBe(true);
    expectChargedOnce(api, (result.structuredContent as { chargeId: string }).chargeId);
    expect(second!.output()).toContain('step replayed from the journal');
  });

  it('stateless lane (2026-07-28): the request runs again after the restart and replays the charge', async () => {
    const { first, url, start, api } = await devWithPayments();
    const answer = rpcResponse(
      url,
      'tools/call',
      { name: 'pay', arguments: PAY },
      { tasks: false },
    );
    await journaled(first, 'charge');
    first.kill('SIGKILL');
    // The client's stream died with the process (a 2026-07-28 client re-issues: see the
    // idempotency key); the request itself is in the log and runs again.
    await answer.then((response) => response.text()).catch(() => undefined);
    const second = start();
    await second.url;
    await journaled(second, 'receipt');
    expectChargedOnce(api);
    expect(second.output()).toContain('step replayed from the journal');
  });

  it('task: the task completes after the restart with the charge replayed', async () => {
    const { first, url, start, api } = await devWithPayments();
    const created = await rpc(url, 'tools/call', { name: 'pay', arguments: PAY });
    expect(created.body.result?.['resultType']).toBe('task');
    const taskId = String(created.body.result?.['taskId']);
    await journaled(first, 'charge');
    first.kill('SIGKILL');
    const second = start();
    const done = await pollTask([await second.url], taskId, ['completed'], {
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    const chargeId = (done['result'] as { structuredContent?: { chargeId?: string } })
      .structuredContent?.chargeId;
    expectChargedOnce(api, chargeId);
  });
});
