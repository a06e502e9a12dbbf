// The sleeping benchmark's tool: `nap` journals when it fell asleep, sleeps `ms` durably
// (`ex.sleep`), and answers when it woke — so the bench reads each wake's lateness from results.
import { currentExecution, defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

export default defineToolModule({
  name: 'sleeper',
  register: (server) => {
    server.registerTool(
      'nap',
      {
        description: 'Sleeps `ms` durably; answers when it fell asleep and when it woke.',
        inputSchema: z.object({ ms: z.number().int().min(0).max(3_600_000) }),
        outputSchema: z.object({ asleepAtMs: z.number(), wokeAtMs: z.number() }),
      },
      async ({ ms }) => {
        const ex = currentExecution()!;
        const asleepAtMs = await ex.step('asleep', () => Date.now());
        await ex.sleep('nap', ms);
        const woke = { asleepAtMs, wokeAtMs: Date.now() };
        return { content: [{ type: 'text', text: JSON.stringify(woke) }], structuredContent: woke };
      },
    );
  },
  taskSupport: { nap: 'optional' },
});
