import { AsyncLocalStorage } from 'node:async_hooks';
import type { Generation } from '@tidemark/protocol';
import type { EventType } from './event-types.js';
import type { StepFunction } from './steps.js';
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
   *
   * @example
   * const charge = await currentExecution()!.step('charge', ({ effectKey }) =>
   *   payments.charge({ amount, idempotencyKey: effectKey }),
   * );
   */
  readonly step: StepFunction;
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
