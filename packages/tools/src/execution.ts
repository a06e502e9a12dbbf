import { AsyncLocalStorage } from 'node:async_hooks';
import type { Generation } from '@tidemark/protocol';
import type { EventType } from './event-types.js';
import type { SignalFunction } from './signals.js';
import type { StepContext, StepFunction, StepOptions } from './steps.js';
import type { ToolLogger } from './tool-logger.js';

/** What a running tool can know of its execution: which generation of which stream it is. */
export interface Execution {
  readonly sessionId: string;
  readonly stream: string;
  readonly generation: Generation;
  /** The generation's attempt: 1 for the first execution, higher after a retry or a takeover. */
  readonly attempt: number;
  /** The authenticated subject the session is bound to, when the gateway authenticates. */
  readonly subject?: string;
  /** The OAuth client the call's token was issued to, when the token says (`client_id`/`azp`). */
  readonly clientId?: string;
  /**
   * The scopes the call's token grants, when the gateway validates tokens that carry them (OAuth
   * JWTs): what a tool authorizes finer actions by. Its `requiredScopes` are checked before it runs.
   */
  readonly scopes?: readonly string[];
  /** The version of the tool's module (`defineToolModule({ version })`), when it says. */
  readonly moduleVersion?: string;
  /**
   * Aborted when the call is cancelled or this worker stops serving it (its partition moved): a
   * step waiting between two tries stops waiting. The tool's `ctx.mcpReq.signal`, for code that
   * has no `ctx` at hand.
   */
  readonly abortSignal?: AbortSignal;
  /**
   * A logger for the tool, its lines stamped with the tool, session, stream and attempt (and, in
   * `tidemark`, the trace and span ids): use it instead of `console` so the lines stay JSON.
   */
  readonly log?: ToolLogger;
  /**
   * A durable step: runs `fn` once per call and journals its outcome (its JSON value, or the error
   * it threw) in the log. A later execution of the same call — a retry, a takeover after its worker
   * died, a restart of `tidemark dev`, a task run again — gets the journaled outcome without running
   * `fn`. A step that was still running when its worker died runs again: pass `effectKey` to the
   * external API as its idempotency key. Steps are told apart by name and by their order among
   * steps of that name (`charge`, `charge#2`, …), so a tool must take its steps in the same order.
   * With `{ retry }` a step whose function throws is tried again, with durable backoff, before its
   * error becomes its outcome (see `StepRetryPolicy`; `NonRetryableError` ends it at once).
   *
   * @example
   * const charge = await currentExecution()!.step('charge', ({ effectKey }) =>
   *   payments.charge({ amount, idempotencyKey: effectKey }),
   * );
   */
  readonly step: StepFunction;
  /**
   * Registers the undo of an effect a step took (a saga). When the call then fails for good — its
   * tool throws an error that is not retried — or is cancelled, the compensations registered run,
   * the last first, each a durable step (`compensate <name>`: once per call, whatever restarts),
   * before the call ends. Register one right after the step whose effect it undoes: a later
   * execution replays that step and registers it again. A compensation that fails is logged and
   * the others still run.
   *
   * @example
   * const charge = await ex.step('charge', ({ effectKey }) => bank.charge(cents, effectKey));
   * ex.compensate('refund', ({ effectKey }) => bank.refund(charge.id, effectKey));
   */
  readonly compensate: CompensateFunction;
  /**
   * Whether this call takes the path a deploy added (Temporal's `patched`). A call started before
   * the deploy, whose journal holds steps past this point that the old code took, gets false and
   * goes on as the old code did; any other call gets true, and its journal remembers it (so it
   * stays true on every replay). Wrap each change to a tool's steps in one, with an id of its own,
   * until no call started before it is in flight; then keep only the new path.
   *
   * @example
   * if (await ex.patched('receipt-by-sms')) await ex.step('sms', () => sms.send(to, text));
   * else await ex.step('email', () => mail.send(to, text));
   */
  readonly patched: (id: string) => Promise<boolean>;
  /**
   * A durable sleep: waits `ms` from the first time the call got here, whatever restarts. The wake
   * time is journaled in the log (a step named `sleep <name>`); while it waits the call gives its
   * slot back and its tool stops — the worker keeps only a timer — and on time the tool runs
   * again, its steps replayed from the journal, up to here, and goes on. A worker that dies, or
   * hands the call's partition over, leaves the wake to the partition's next owner. So the code
   * before a sleep runs again after it: keep what it decides in steps (Temporal's rule — no clock,
   * randomness or reads outside `step`). Not inside a step. Sleeps under a second wait in place.
   *
   * @example
   * await ex.step('remind', () => mail.send(to, 'Your trial ends tomorrow'));
   * await ex.sleep('a day', 24 * 60 * 60 * 1000);
   * await ex.step('expire', () => accounts.expire(id));
   */
  readonly sleep: SleepFunction;
  /**
   * A signal (an awakeable): a URL on the gateways that takes one JSON answer, and `wait()` for it.
   * While the call waits it gives its slot back and its tool stops, as in a `sleep`; the answer is
   * journaled in the log when it is POSTed — with its worker down too — and wakes the call on
   * whichever worker owns it. The same rule as `sleep` holds for the code before it: it runs again.
   * Not inside a step. The worker needs the gateways' keyring (and `publicUrl` for the URL's host).
   *
   * @example
   * const approval = await ex.signal('approval', { schema: z.object({ ok: z.boolean() }) });
   * await ex.step('ask', () => chat.send(approver, `Approve? ${approval.url}`));
   * if (!(await approval.wait()).ok) throw new Error('refused');
   */
  readonly signal: SignalFunction;
  /**
   * `fetch`, for a step's calls to other services: inside a step it sends the step's `effectKey`
   * as `Idempotency-Key` (unless the request has one), so a try that reached the service before its
   * worker died is not done twice; a response that asks to be tried again — 408, 429 or a 5xx —
   * is thrown as a `FetchStatusError` carrying `retryAfterMs` from its `Retry-After`, which the
   * step's retry policy waits; any other response is returned. Each request is a client span of
   * the call's trace, its trace context sent along (`traceparent`).
   *
   * @example
   * const order = await ex.step('order', async () =>
   *   (await ex.fetch(`${shop}/orders`, { method: 'POST', body })).json(),
   *   { retry: { maxAttempts: 5 } },
   * );
   */
  readonly fetch: StepFetch;
  /**
   * Records an occurrence of one of the module's event types (the Events extension): in the log,
   * delivered to every subscriber of `(type, arguments)` — polls, push streams and webhooks. The
   * arguments and data are checked against the type's schemas. Resolves once it is in the log.
   * Each call is a new occurrence: wrap it in a `step` to emit once per call, whatever retries.
   * Undefined where the worker offers no event types.
   *
   * @example
   * await currentExecution()!.emit?.(orderShipped, { customer }, { orderId, carrier });
   */
  readonly emit?: EmitFunction;
}

/** `Execution.compensate`: a compensation's name (its step's, after `compensate `) and its undo. */
export type CompensateFunction = (
  name: string,
  fn: (step: StepContext) => unknown,
  options?: StepOptions,
) => void;

/** `Execution.sleep`: a name for the sleep (its step's, after `sleep `) and how long, in ms. */
export type SleepFunction = (name: string, ms: number) => Promise<void>;

/** `Execution.fetch`: the global `fetch`'s signature. */
export type StepFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A response `Execution.fetch` got that asks to be tried again (408, 429, 5xx): thrown, so the
 * step's retry policy tries again — after `retryAfterMs` when the response said (`Retry-After`).
 */
export class FetchStatusError extends Error {
  readonly status: number;
  readonly retryAfterMs: number | undefined;

  constructor(status: number, url: string, retryAfterMs: number | undefined) {
    super(
      `${url} answered ${status}${retryAfterMs === undefined ? '' : `, retry after ${retryAfterMs} ms`}`,
    );
    this.name = 'FetchStatusError';
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Emits one occurrence; resolves with its id (what receivers deduplicate on). */
export type EmitFunction = <Args, Data>(
  type: EventType<Args, Data>,
  args: Args,
  data: Data,
  options?: EmitOptions,
) => Promise<{ readonly eventId: string }>;

export interface EmitOptions {
  /** The upstream's own id, when it has one (receivers deduplicate on it). Default: a new one. */
  readonly eventId?: string;
  /** When it happened. Default: now. */
  readonly timestamp?: Date;
}

const storage = new AsyncLocalStorage<Execution>();

/** The execution of the tool call running now, inside a tool callback; undefined elsewhere. */
export function currentExecution(): Execution | undefined {
  return storage.getStore();
}

/** @internal */
export function runInExecution<T>(execution: Execution, fn: () => T): T {
  return storage.run(execution, fn);
}
