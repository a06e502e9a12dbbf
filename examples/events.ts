// Event types (the MCP Events extension) a module offers. `ticks` counts: its occurrences are
// { n } with n increasing by one in each stream (each everyMs), and its position is n, so a
// source started again from a recorded position continues the count instead of restarting it.
import { setTimeout as sleep } from 'node:timers/promises';
import { defineEventType, defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export const ticks = defineEventType({
  name: 'ticks',
  description: 'A tick every everyMs milliseconds, counting from 1.',
  inputSchema: z.object({ everyMs: z.number().int().min(10).max(3_600_000) }),
  payloadSchema: z.object({ n: z.number().int().min(1) }),
  replayWindowMs: 60 * 60 * 1000,
  async *source({ arguments: { everyMs }, position, signal }) {
    for (let n = position === undefined ? 1 : Number(position) + 1; ; n++) {
      await sleep(everyMs, undefined, { signal });
      yield { data: { n }, position: String(n) };
    }
  },
});

export default defineToolModule({
  name: 'events',
  events: [ticks],
  register() {
    // Tools of their own come later; the event types are the module's offer.
  },
});
