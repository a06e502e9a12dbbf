// `transfer`: an approval, worked — a risky call that waits for a named person's yes. It asks the
// approver through a signal (`ex.signal`): the signal's URL goes to them (`notify`: a chat message
// or a mail in real life; here the worker's log and a log message to the client), the call gives
// its slot back and waits — minutes or days, whatever restarts meanwhile — and goes on, on
// whichever worker owns it, when the approver POSTs their decision to the URL. Who decided what,
// and when, stays in the call's journal in the log: the signal's answer, then the `decision` step.
// The console shows both on the call's page: its audit trail.
//
//   curl -X POST -H 'Content-Type: application/json' -d '{"approved":true}' '<the URL>'
import { currentExecution, defineToolModule, SignalTimeoutError } from '@tidemark/tools';
import type { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

/** What an approver POSTs. */
export const decision = z.object({
  approved: z.boolean(),
  comment: z.string().max(500).optional(),
});

/** The ask an approver gets. */
export interface ApprovalRequest {
  readonly approver: string;
  /** Where to POST the decision (`{ "approved": true }`), once. */
  readonly url: string;
  readonly expiresAt: Date | undefined;
  readonly summary: string;
}

/** What the journal keeps of a decision (the `decision` step's value): the audit record. */
export interface DecisionRecord {
  readonly approver: string;
  readonly approved: boolean;
  readonly comment?: string;
  /** When the decision reached the worker, ISO 8601. */
  readonly decidedAt: string;
  /** The subject the gateway authenticated on the POST, when it carried a token. */
  readonly subject?: string;
  /** `expired`: no decision came in time (then `approved` is false). */
  readonly expired?: boolean;
}

export interface ApprovalsOptions {
  /** Sends the approver their ask (once per call: it runs in a step). Default: the worker's log. */
  readonly notify?: (request: ApprovalRequest) => void | Promise<void>;
  /** Makes the transfer, once approved (`idempotencyKey`: the step's effect key). */
  readonly transfer?: (request: {
    to: string;
    amountCents: number;
    idempotencyKey: string;
  }) => unknown;
}

const DAY_MS = 24 * 60 * 60 * 1000;

const transferInput = z.object({
  to: z.string().min(1).max(200),
  amountCents: z.number().int().min(1).max(100_000_000),
  /** Who must approve it: their ask names them, and the record too. */
  approver: z.string().min(1).max(200),
  /** How long the approver has (default a day); past it the transfer is refused. */
  timeoutMs: z
    .number()
    .int()
    .min(1_000)
    .max(30 * DAY_MS)
    .default(DAY_MS),
});

export function registerApprovals(server: McpServer, options: ApprovalsOptions = {}): void {
  server.registerTool(
    'transfer',
    {
      description:
        'Transfers `amountCents` to `to` once `approver` approves it at the URL they are sent: the call waits for them, durably.',
      inputSchema: transferInput,
      outputSchema: z.object({
        approver: z.string(),
        approved: z.boolean(),
        decidedAt: z.string(),
        comment: z.string().optional(),
        expired: z.boolean().optional(),
        transferId: z.string().optional(),
      }),
    },
    async ({ to, amountCents, approver, timeoutMs }, ctx) => {
      const ex = currentExecution()!;
      const summary = `transfer ${amountCents} cents to ${to}`;
      const approval = await ex.signal('approval', { schema: decision, timeoutMs });
      await ex.step('ask', async () => {
        const ask = { approver, url: approval.url, expiresAt: approval.expiresAt, summary };
        await (options.notify ?? logAsk)(ask);
        await ctx.mcpReq.notify({
          method: 'notifications/message',
          params: { level: 'info', data: { asked: approver, summary, url: approval.url } },
        });
      });
      let record: DecisionRecord;
      try {
        const { value, at, subject } = await approval.answer();
        record = await ex.step('decision', () => ({
          approver,
          approved: value.approved,
          ...(value.comment === undefined ? {} : { comment: value.comment }),
          decidedAt: at.toISOString(),
          ...(subject === undefined ? {} : { subject }),
        }));
      } catch (error) {
        if (!(error instanceof SignalTimeoutError)) throw error;
        record = await ex.step('decision', () => ({
          approver,
          approved: false,
          decidedAt: new Date().toISOString(),
          expired: true,
        }));
      }
      if (!record.approved) {
        const why = record.expired === true ? 'did not answer in time' : 'refused';
        return {
          content: [{ type: 'text' as const, text: `${approver} ${why}: no ${summary}` }],
          structuredContent: { ...record },
        };
      }
      const made = await ex.step('transfer', ({ effectKey }) => {
        const made = options.transfer?.({ to, amountCents, idempotencyKey: effectKey });
        return { transferId: typeof made === 'string' ? made : effectKey };
      });
      return {
        content: [
          { type: 'text' as const, text: `${approver} approved: ${summary} (${made.transferId})` },
        ],
        structuredContent: { ...record, transferId: made.transferId },
      };
    },
  );
}

function logAsk(ask: ApprovalRequest): void {
  currentExecution()?.log?.info(
    { approver: ask.approver, summary: ask.summary, url: ask.url },
    'approval asked',
  );
}

/** The module with an approver's ask sent, and the transfer made, one's own way. */
export function approvalsModule(options: ApprovalsOptions = {}) {
  return defineToolModule({
    name: 'approvals',
    register: (server) => registerApprovals(server, options),
    taskSupport: { transfer: 'optional' },
  });
}

export default approvalsModule();
