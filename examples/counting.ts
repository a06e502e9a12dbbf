// `count` and `flaky_count`: deterministic streams, so a splice, a gap or a duplicate is visible.
import { defineToolModule, currentExecution, RetryableToolError } from '@tidemark/worker';
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';

const countInput = z.object({
  to: z.number().int().min(1).max(100_000),
  delayMs: z.number().int().min(0).max(60_000).default(0),
});

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

async function count(to: number, delayMs: number, ctx: ServerContext, failAt?: number) {
  const token = ctx.mcpReq._meta?.progressToken;
  const numbers: number[] = [];
  for (let i = 1; i <= to; i++) {
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
    structuredContent: { numbers },
  };
}

export function registerCounting(server: McpServer): void {
  server.registerTool(
    'count',
    {
      description:
        'Counts from 1 to `to`, one progress notification per number, waiting `delayMs` between numbers.',
      inputSchema: countInput,
      outputSchema: z.object({ numbers: z.array(z.number()) }),
    },
    ({ to, delayMs }, ctx) => count(to, delayMs, ctx),
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
      outputSchema: z.object({ numbers: z.array(z.number()) }),
    },
    ({ to, delayMs, failAt, failAttempts }, ctx) => {
      const attempt = currentExecution()?.attempt ?? 1;
      return count(to, delayMs, ctx, attempt <= failAttempts ? failAt : undefined);
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
