// Realistic tools to copy: one that asks the user mid-call in the way that works on every protocol
// revision (multi-round-trip input, `inputRequired`), one that asks the older push way
// (elicitation, session lane only), and one that reports the progress of a long upstream job and
// stops cleanly when the call is cancelled. The SDK's own types, no casts.
import {
  acceptedContent,
  inputRequired,
  inputResponse,
  type McpServer,
} from '@modelcontextprotocol/server';
import { defineToolModule } from '@tidemark/tools';
import * as z from 'zod';

const confirmation = z.object({ confirm: z.boolean().describe('Deploy it') });

export function registerInteractive(server: McpServer): void {
  // The way that works on both lanes: return `inputRequired` with what the user must answer; the
  // client asks, then calls again with the answer in `inputResponses`. On 2026-07-28 that is the
  // protocol's own multi-round trip (and the only way); on the session lane the SDK turns it into
  // an elicitation request. Nothing is held between the rounds: any worker serves the second one.
  server.registerTool(
    'confirm_deploy',
    {
      description: 'Asks the user to confirm before deploying (to a pretend environment).',
      inputSchema: z.object({ env: z.string().min(1) }),
    },
    ({ env }, ctx) => {
      // A decline or a cancel is the user's answer, not a missing one: asking again would loop
      // until the client gives up. `inputResponse` tells "not asked yet" from "said no".
      const response = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
      if (response.kind === 'elicit' && response.action !== 'accept') {
        const why = response.action === 'decline' ? 'declined' : 'cancelled';
        return { content: [{ type: 'text', text: `not deployed to ${env}: ${why}` }] };
      }
      const answer = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
      if (answer === undefined)
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({
              message: `Deploy to ${env}?`,
              requestedSchema: confirmation,
            }),
          },
        });
      const text = answer.confirm ? `deployed to ${env}` : `not deployed to ${env}`;
      return { content: [{ type: 'text', text }] };
    },
  );

  // The push way (`elicitInput`): session lane only; on 2026-07-28 the SDK refuses it.
  server.registerTool(
    'confirm_delete',
    {
      description: 'Asks the user to confirm before deleting a (pretend) file.',
      inputSchema: z.object({ path: z.string().min(1) }),
    },
    async ({ path }, ctx) => {
      const answer = await ctx.mcpReq.elicitInput({
        mode: 'form',
        message: `Delete ${path}?`,
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Delete it' } },
          required: ['confirm'],
        },
      });
      const confirmed = answer.action === 'accept' && answer.content?.['confirm'] === true;
      return { content: [{ type: 'text', text: confirmed ? `deleted ${path}` : `kept ${path}` }] };
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
      const { signal, _meta, notify } = ctx.mcpReq;
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
      return { content: [{ type: 'text', text: `report ready (${steps} parts)` }] };
    },
  );
}

export default defineToolModule({
  name: 'interactive',
  register: registerInteractive,
  // As a task, `confirm_deploy` asks through `tasks/get` (`input_required`) and `tasks/update`.
  taskSupport: { confirm_deploy: 'optional' },
});
