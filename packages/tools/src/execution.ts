import { AsyncLocalStorage } from 'node:async_hooks';
import type { Generation } from '@tidemark/protocol';
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
