import { JsonRpcErrorCodes, type StreamHead } from '@tidemark/protocol';

/**
 * What a worker does with a call it was given, decided from its stream's head as the log settled
 * it (after any handoff): the call ended already (`done`: nothing runs, nothing is answered again),
 * it was started too often without finishing (`refuse`: answered with `error`, as the generation
 * `attempt` — a call that kills every worker it runs on must not take them all), or it runs as
 * generation `attempt`. Every lane decides by it: the session lane, a stateless call, a task.
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
}

export function decideRun(head: StreamHead | undefined, limits: RunLimits): RunDecision {
  if (head?.terminal !== undefined) return { kind: 'done' };
  // The generation this worker would begin: one past the head's (nextGeneration).
  const attempt = (head?.generation.attempt ?? 0) + 1;
  if (attempt > limits.maxExecutionsPerCall)
    return { kind: 'refuse', attempt, error: tooManyExecutions(attempt, limits) };
  return { kind: 'run', attempt };
}

/** The answer to a call started `attempt − 1` times without finishing. */
function tooManyExecutions(
  attempt: number,
  { maxExecutionsPerCall }: RunLimits,
): { code: number; message: string } {
  return {
    code: JsonRpcErrorCodes.internalError,
    message: `Internal error: the call was started ${attempt - 1} times without finishing (limit ${maxExecutionsPerCall}); it is not run again`,
  };
}
