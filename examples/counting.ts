// `count` and `flaky_count`: deterministic streams, so a splice, a gap or a duplicate is visible.
// With `effect`, a call also takes one durable step — an effect on a pretend outside system — so
// the failure suites can count effects as well as streams.
import { appendFileSync } from 'node:fs';
import {
  defineToolModule,
  currentExecution,
  RetryableToolError,
  SignalTimeoutError,
} from '@tidemark/tools';
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';

const countInput = z.object({
  to: z.number().int().min(1).max(100_000),
  delayMs: z.number().int().min(0).max(60_000).default(0),
  /** Take one durable step half-way: an effect, recorded (see `applyEffect`). */
  effect: z.boolean().default(false),
  /** Sleep durably (`ex.sleep`) this long before counting, the slot given back meanwhile. */
  napMs: z.number().int().min(0).max(3_600_000).default(0),
  /**
   * Wait for a signal (`ex.signal`) before counting, which the call answers itself this long after
   * asking — a POST to its URL through the gateways (the worker's `publicUrl`); if that POST is
   * lost with its worker, the signal expires 5 s later and the call counts anyway.
   */
  signalAfterMs: z.number().int().min(0).max(60_000).default(0),
});

const countOutput = z.object({ numbers: z.array(z.number()), effect: z.string().optional() });

/**
 * The pretend outside system of `effect`: every run of the step appends a line — its effect key,
 * the process that ran it, the call, the generation and when — to the file `TIDEMARK_EFFECTS` names
 * (nothing without it). A test reads the file to count effects: a key twice is a step that ran
 * twice, which only the death of the first run's process (its pid) can excuse.
 */
function applyEffect(effectKey: string): string {
  const file = process.env['TIDEMARK_EFFECTS'];
  const execution = currentExecution();
  if (file !== undefined)
    appendFileSync(
      file,
      `${JSON.stringify({
        effectKey,
        pid: process.pid,
        session: execution?.sessionId,
        stream: execution?.stream,
        attempt: execution?.attempt,
        atMs: Date.now(),
      })}\n`,
    );
  return effectKey;
}

/** Waits `delayMs`, or with 0 only yields to the event loop (never a timer: benchmarks measure the transport). */
function pause(delayMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    if (delayMs === 0) return void setImmediate(resolve);
    const timer = setTimeout(resolve, delayMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

async function count(
  { to, delayMs, effect, napMs, signalAfterMs }: z.output<typeof countInput>,
  ctx: ServerContext,
  failAt?: number,
) {
  // Before anything is sent: the call runs again from the top when it wakes, and counts once.
  if (napMs > 0) await currentExecution()?.sleep('nap', napMs);
  if (signalAfterMs > 0) await selfSignal(signalAfterMs);
  const token = ctx.mcpReq._meta?.progressToken;
  const numbers: number[] = [];
  let effectKey: string | undefined;
  for (let i = 1; i <= to; i++) {
    // Half-way: an execution killed after this point replays the step instead of running it.
    if (effect && i === Math.ceil(to / 2))
      effectKey = await currentExecution()?.step('effect', (step) => applyEffect(step.effectKey));
    await pause(delayMs, ctx.mcpReq.signal);
    if (failAt !== undefined && i === failAt) {
      throw new RetryableToolError(
        `flaky_count failed at ${i} on attempt ${currentExecution()?.attempt ?? 1}`,
      );
    }
    numbers.push(i);
    if (token !== undefined) {
      await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: i, total: to, message: String(i) },
      });
    }
  }
  return {
    content: [{ type: 'text' as const, text: numbers.join(',') }],
    structuredContent: { numbers, ...(effectKey === undefined ? {} : { effect: effectKey }) },
  };
}

/** A signal the call answers itself, `afterMs` after asking (see `signalAfterMs`). */
async function selfSignal(afterMs: number): Promise<void> {
  const ex = currentExecution()!;
  const signal = await ex.signal('go', { timeoutMs: afterMs + 5_000 });
  await ex.step('post go', () => {
    const post = () =>
      fetch(signal.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: 'true',
      })
        .then((response) => response.body?.cancel())
        .catch(() => undefined);
    setTimeout(() => void post(), afterMs).unref();
  });
  try {
    await signal.wait();
  } catch (error) {
    if (!(error instanceof SignalTimeoutError)) throw error;
  }
}

export function registerCounting(server: McpServer): void {
  server.registerTool(
    'count',
    {
      description:
        'Counts from 1 to `to`, one progress notification per number, waiting `delayMs` between numbers.',
      inputSchema: countInput,
      outputSchema: countOutput,
    },
    (args, ctx) => count(args, ctx),
  );
  server.registerTool(
    'flaky_count',
    {
      description:
        'Like count, but attempts 1..failAttempts fail (retryably) on reaching failAt; the runtime retries as a new generation.',
      inputSchema: countInput.extend({
        failAt: z.number().int().min(1),
        failAttempts: z.number().int().min(0).max(10).default(1),
      }),
      outputSchema: countOutput,
    },
    ({ failAt, failAttempts, ...args }, ctx) => {
      const attempt = currentExecution()?.attempt ?? 1;
      return count(args, ctx, attempt <= failAttempts ? failAt : undefined);
    },
  );
}

export default defineToolModule({
  name: 'counting',
  register: registerCounting,
  retry: { maxAttempts: 5, backoffMs: 10 },
  // For 2026-07-28 clients that declare the Tasks extension, these run as durable tasks.
  taskSupport: { count: 'optional', flaky_count: 'optional' },
});
