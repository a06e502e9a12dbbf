import { JsonRpcErrorCodes, type StreamHead } from '@tidemark/protocol';

/**
 * What a worker does with a call it was given, decided from its stream's head as the log settled
 * it (after any handoff): the call ended already (`done`: nothing runs, nothing is answered again),
 * it is refused (`refuse`: answered with `error`, as the generation `attempt`), or it runs as
 * generation `attempt`. A call is refused when it was started too often without finishing — a
 * call that kills every worker it runs on must not take them all — or when its session runs as
 * many calls as it may. Every lane decides by it: the session lane, a stateless call, a task.
 */
export type RunDecision =
  | { readonly kind: 'done' }
  | {
      readonly kind: 'refuse';
      readonly attempt: number;
      readonly error: { readonly code: number; readonly message: string };
    }
  | { readonly kind: 'run'; readonly attempt: number };

export interface RunLimits {
  /** Generations a call may start without finishing before it is refused. */
  readonly maxExecutionsPerCall: number;
  /** Calls one session may run at once (a lane without sessions has no such bound). */
  readonly maxConcurrentCalls?: number | undefined;
}

/**
 * Decides a call from its settled `head`; `inFlight` is how many other calls of its session run
 * (or are starting) here.
 */
export function decideRun(
  head: StreamHead | undefined,
  limits: RunLimits,
  inFlight = 0,
): RunDecision {
  if (head?.terminal !== undefined) return { kind: 'done' };
  // The generation this worker would begin: one past the head's (nextGeneration).
  const attempt = (head?.generation.attempt ?? 0) + 1;
  const { maxExecutionsPerCall, maxConcurrentCalls } = limits;
  if (attempt > maxExecutionsPerCall)
    return {
      kind: 'refuse',
      attempt,
      error: {
        code: JsonRpcErrorCodes.internalError,
        message: `Internal error: the call was started ${attempt - 1} times without finishing (limit ${maxExecutionsPerCall}); it is not run again`,
      },
    };
  // One busy session must not hold the partition (and every other session on it) back.
  if (maxConcurrentCalls !== undefined && inFlight >= maxConcurrentCalls)
    return {
      kind: 'refuse',
      attempt,
      error: {
        code: JsonRpcErrorCodes.badRequest,
        message: `Too many concurrent requests in this session (limit ${maxConcurrentCalls}); retry later`,
      },
    };
  return { kind: 'run', attempt };
}
