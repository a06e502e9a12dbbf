// Realistic tools to copy: one that asks the user mid-call (elicitation), one that reports the
// progress of a long upstream job and stops cleanly when the call is cancelled.
import { defineToolModule } from '@tidemark/worker';
import type { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

interface Ctx {
  mcpReq: {
    signal: AbortSignal;
    _meta?: { progressToken?: string | number };
    notify: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>;
    elicitInput: (
      params: Record<string, unknown>,
    ) => Promise<{ action: string; content?: Record<string, unknown> }>;
  };
}

export function registerInteractive(server: McpServer): void {
  server.registerTool(
    'confirm_delete',
    {
      description: 'Asks the user to confirm before deleting a (pretend) file.',
      inputSchema: z.object({ path: z.string().min(1) }),
    },
    async ({ path }, ctx) => {
      const answer = await (ctx as unknown as Ctx).mcpReq.elicitInput({
        mode: 'form',
        message: `Delete ${path}?`,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Delete it' } },
          required: ['confirm'],
        },
      });
      const confirmed = answer.action === 'accept' && answer.content?.['confirm'] === true;
      return {
        content: [{ type: 'text' as const, text: confirmed ? `deleted ${path}` : `kept ${path}` }],
      };
    },
  );

  server.registerTool(
    'export_report',
    {
      description: 'Runs a long upstream export job, reporting its progress in steps.',
      inputSchema: z.object({
        steps: z.number().int().min(1).max(1_000).default(10),
        stepMs: z.number().int().min(0).max(60_000).default(200),
      }),
    },
    async ({ steps, stepMs }, ctx) => {
      const { signal, _meta, notify } = (ctx as unknown as Ctx).mcpReq;
      for (let step = 1; step <= steps; step++) {
        // Stands for polling an upstream job; a real tool would pass `signal` to fetch().
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, stepMs);
          signal.addEventListener(
            'abort',
            () => (clearTimeout(timer), reject(new Error('export cancelled'))),
            { once: true },
          );
        });
        if (_meta?.progressToken !== undefined) {
          await notify({
            method: 'notifications/progress',
            params: {
              progressToken: _meta.progressToken,
              progress: step,
              total: steps,
              message: `exported part ${step} of ${steps}`,
            },
          });
        }
      }
      return { content: [{ type: 'text' as const, text: `report ready (${steps} parts)` }] };
    },
  );
}

export default defineToolModule({ name: 'interactive', register: registerInteractive });
