// A tool module written against the MCP SDK v1 (`@modelcontextprotocol/sdk`), moved over unchanged:
// `server.tool(...)` with a raw Zod shape, progress through `extra.sendNotification`, cancellation
// through `extra.signal`. `sdk: 'v1'` is the only line it needs.
import { defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export default defineToolModule({
  name: 'sdk-v1',
  sdk: 'v1',
  register(server) {
    server.tool(
      'countdown',
      'Counts down from a number to liftoff, one progress notification per step.',
      { from: z.number().int().min(1).max(1_000), delayMs: z.number().int().min(0).default(10) },
      async (
        { from, delayMs }: { from: number; delayMs: number },
        extra: {
          signal: AbortSignal;
          _meta?: { progressToken?: string | number };
          sendNotification: (notification: unknown) => Promise<void>;
        },
      ) => {
        const token = extra._meta?.progressToken;
        for (let step = 1; step <= from; step++) {
          if (extra.signal.aborted) throw new Error('cancelled');
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          if (token !== undefined)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: {
                progressToken: token,
                progress: step,
                total: from,
                message: `T-${from - step}`,
              },
            });
        }
        return { content: [{ type: 'text', text: 'liftoff' }] };
      },
    );
  },
});
