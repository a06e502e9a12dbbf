// The benchmark's tool, `ticker`: n progress notifications, each stamped with the time it was
// emitted, then a result. The same tool runs on Tidemark (this module) and on the SDK baseline
// (sdk-server.ts), so both carry identical messages.
import { currentExecution, defineToolModule } from '@tidemark/tools';
import type { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

export const tickerInput = {
  n: z.number().int().min(1).max(1_000_000),
  intervalMs: z.number().int().min(0).max(10_000).default(0),
};

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

/** Emits the ticks through `notify`; with intervalMs 0 it only yields to the event loop between them. */
export async function tick(
  n: number,
  intervalMs: number,
  token: string | number | undefined,
  notify: (params: Record<string, unknown>) => Promise<void>,
): Promise<{ content: Array<{ type: 'text'; text: string }> }> {
  for (let i = 1; i <= n; i++) {
    if (token !== undefined)
      await notify({ progressToken: token, progress: i, total: n, message: String(nowMs()) });
    await new Promise((resolve) =>
      intervalMs === 0 ? setImmediate(resolve) : setTimeout(resolve, intervalMs),
    );
  }
  return { content: [{ type: 'text', text: `ticked ${n}` }] };
}

interface Ctx {
  mcpReq: {
    _meta?: { progressToken?: string | number };
    notify: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>;
  };
}

export default defineToolModule({
  name: 'bench',
  taskSupport: { hold: 'required' },
  register: (server: McpServer) => {
    server.registerTool(
      'ticker',
      {
        description: 'n stamped progress notifications, then a result',
        inputSchema: z.object(tickerInput),
      },
      ({ n, intervalMs }, ctx) => {
        const { mcpReq } = ctx as unknown as Ctx;
        return tick(n, intervalMs, mcpReq._meta?.progressToken, (params) =>
          mcpReq.notify({ method: 'notifications/progress', params }),
        );
      },
    );
    // A long task (`npm run bench:tenants`): holds its task slot for ms, then answers.
    server.registerTool(
      'hold',
      {
        description: 'waits ms, then answers (a long task)',
        inputSchema: z.object({ ms: z.number().int().min(0).max(3_600_000) }),
      },
      async ({ ms }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return { content: [{ type: 'text' as const, text: `held ${ms} ms` }] };
      },
    );
    // What a durable step costs (`npm run bench:effects`): n steps, each journaled in the log.
    server.registerTool(
      'steps',
      {
        description: 'n durable steps, each returning its index, then a result',
        inputSchema: z.object({ n: z.number().int().min(0).max(10_000) }),
      },
      async ({ n }) => {
        const execution = currentExecution();
        let sum = 0;
        for (let i = 0; i < n; i++) sum += (await execution?.step('step', () => i)) ?? 0;
        return { content: [{ type: 'text' as const, text: String(sum) }] };
      },
    );
  },
});
