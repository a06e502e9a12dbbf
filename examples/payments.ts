// `pay`: durable steps, worked. It charges a card and emails a receipt through a pretend payment
// API. Each effect is a step (`currentExecution().step`): a retry, or a takeover after its worker
// was killed, replays the journaled charge instead of charging again — and passes the step's
// `effectKey` to the API as its idempotency key, so even a charge that was in flight when its
// worker died (and so runs again) is made once. With `receiptAfterMs` it sleeps durably between
// the charge and the receipt (`ex.sleep`): any worker wakes it on time, whatever died meanwhile.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { currentExecution, defineToolModule, RetryableToolError } from '@tidemark/tools';
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';

/** One request the pretend API received, and what it did. */
export interface LedgerEntry {
  /** `receipt-refused`: the receipt service was down for this try (see `refuseTries`). */
  readonly kind: 'charge' | 'receipt' | 'receipt-refused';
  readonly idempotencyKey: string;
  /** The id of the charge or email; the same for every request with the same key. */
  readonly id: string;
  /** False when the API had seen the key and answered with what it did then. */
  readonly fresh: boolean;
  readonly amountCents?: number;
  readonly to: string;
  /** When the API received it (ms since the epoch). */
  readonly atMs: number;
}

/**
 * A pretend payment provider that, like Stripe, dedups by idempotency key: a second request with a
 * key it has seen answers the first one's outcome and changes nothing. Its ledger is a JSON-lines
 * file (`PAYMENTS_LEDGER`), so it outlives the worker processes a test kills; in memory without it.
 */
export class PretendPayments {
  private readonly memory: LedgerEntry[] = [];

  constructor(private readonly file = process.env['PAYMENTS_LEDGER']) {}

  charge(request: { to: string; amountCents: number; idempotencyKey: string }): LedgerEntry {
    return this.request('charge', request);
  }

  /**
   * Sends a receipt — unless the receipt service is down for this try (`attempt` ≤ `refuseTries`):
   * then it answers 503 with `Retry-After`, thrown as an error carrying `retryAfterMs`.
   */
  sendReceipt(request: {
    to: string;
    chargeId: string;
    idempotencyKey: string;
    attempt?: number;
    refuseTries?: number;
    retryAfterMs?: number;
  }): LedgerEntry {
    const { attempt = 1, refuseTries = 0, retryAfterMs = 1_000 } = request;
    if (attempt <= refuseTries) {
      this.request('receipt-refused', request);
      throw Object.assign(new Error(`the receipt service is unavailable (503, try ${attempt})`), {
        retryAfterMs,
      });
    }
    return this.request('receipt', request);
  }

  /** Every request received, in order (the file's, when there is one). */
  entries(): LedgerEntry[] {
    if (this.file === undefined) return [...this.memory];
    if (!existsSync(this.file)) return [];
    return readFileSync(this.file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LedgerEntry);
  }

  private request(
    kind: LedgerEntry['kind'],
    request: { to: string; amountCents?: number; idempotencyKey: string },
  ): LedgerEntry {
    const seen = this.entries().find(
      (entry) => entry.kind === kind && entry.idempotencyKey === request.idempotencyKey,
    );
    const entry: LedgerEntry = {
      kind,
      idempotencyKey: request.idempotencyKey,
      id: seen?.id ?? `${kind === 'charge' ? 'ch' : 'em'}_${randomUUID()}`,
      fresh: seen === undefined,
      to: request.to,
      atMs: Date.now(),
      ...(request.amountCents === undefined ? {} : { amountCents: request.amountCents }),
    };
    if (this.file === undefined) this.memory.push(entry);
    else appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
    return entry;
  }
}

export const payments = new PretendPayments();

const payInput = z.object({
  to: z.string().min(1).max(200),
  amountCents: z.number().int().min(1).max(100_000_000),
  /** Waits this long between the charge and the receipt (where a test kills the worker). */
  holdMs: z.number().int().min(0).max(120_000).default(0),
  /** Executions 1..n fail (retryably) after the charge: the retry replays it. */
  failAfterCharge: z.number().int().min(0).max(10).default(0),
  /** The receipt service refuses its first n tries, asking to be tried again this much later. */
  receiptRefusals: z.number().int().min(0).max(4).default(0),
  receiptRetryAfterMs: z.number().int().min(0).max(60_000).default(1_000),
  /** Sends the receipt this much after the charge: a durable sleep (`ex.sleep`), the slot given back. */
  receiptAfterMs: z.number().int().min(0).max(86_400_000).default(0),
});

/**
 * The receipt step's retry policy: a receipt service that is down is tried again — after what its
 * `Retry-After` asks, else with backoff — up to five tries, counted across worker restarts.
 */
const RECEIPT_RETRY = { maxAttempts: 5, initialDelayMs: 500, maxDelayMs: 10_000 };

export function registerPayments(server: McpServer, api: PretendPayments = payments): void {
  server.registerTool(
    'pay',
    {
      description:
        'Charges `amountCents` to `to` and emails a receipt, each a durable step: never twice for one call.',
      inputSchema: payInput,
      outputSchema: z.object({ chargeId: z.string(), receiptId: z.string() }),
    },
    async (input, ctx) => {
      const { to, amountCents, holdMs, failAfterCharge } = input;
      const execution = currentExecution()!;
      const charge = await execution.step('charge', ({ effectKey }) =>
        api.charge({ to, amountCents, idempotencyKey: effectKey }),
      );
      await progress(ctx, 1, `charged ${charge.id}`);
      await hold(holdMs, ctx.mcpReq.signal);
      if (execution.attempt <= failAfterCharge)
        throw new RetryableToolError(`the receipt service is down (attempt ${execution.attempt})`);
      // Asleep, the call holds no slot; on time it runs again from the top, the charge replayed.
      if (input.receiptAfterMs > 0) await execution.sleep('before receipt', input.receiptAfterMs);
      const receipt = await execution.step(
        'receipt',
        ({ effectKey, attempt }) =>
          api.sendReceipt({
            to,
            chargeId: charge.id,
            idempotencyKey: effectKey,
            attempt,
            refuseTries: input.receiptRefusals,
            retryAfterMs: input.receiptRetryAfterMs,
          }),
        { retry: RECEIPT_RETRY },
      );
      await progress(ctx, 2, `receipt ${receipt.id}`);
      return {
        content: [{ type: 'text' as const, text: `charged ${amountCents} to ${to}: ${charge.id}` }],
        structuredContent: { chargeId: charge.id, receiptId: receipt.id },
      };
    },
  );
}

/** A progress notification, when the client asked for progress: one per step taken. */
async function progress(ctx: ServerContext, step: number, message: string): Promise<void> {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return;
  await ctx.mcpReq.notify({
    method: 'notifications/progress',
    params: { progressToken: token, progress: step, total: 2, message },
  });
}

function hold(ms: number, signal: AbortSignal): Promise<void> {
  if (ms === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
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

/** The module over a payment API of one's own (a test's fresh one). */
export function paymentsModule(api: PretendPayments = payments) {
  return defineToolModule({
    name: 'payments',
    register: (server) => registerPayments(server, api),
    retry: { maxAttempts: 3, backoffMs: 10 },
    taskSupport: { pay: 'optional' },
  });
}

export default paymentsModule();
