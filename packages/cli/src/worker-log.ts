import type { ExecutionEnd, WorkerOptions } from '@tidemark/worker';
import type { Logger } from './logger.js';
import { messageOf } from '@tidemark/protocol';

// What a worker tells the process's log: problems it rides out, executions as they start and end.

/** The worker's hooks, writing to the process's structured log. */
export function observe(
  log: Logger,
): Pick<WorkerOptions, 'onProblem' | 'onExecution' | 'onExecutionEnd' | 'onStep' | 'logger'> {
  return {
    // Tools log through the process's logger: JSON lines with the trace and span ids.
    logger: log,
    onExecutionEnd: (end) => logExecutionEnd(log, end),
    // A step is an effect on the world: the operator sees each one journaled, or replayed
    // instead of run again.
    onStep: ({ session, stream, step, replayed, ok, attempts, retryInMs }) =>
      log.info(
        { session, stream, step, ok, attempts, ...(retryInMs === undefined ? {} : { retryInMs }) },
        replayed
          ? 'step replayed from the journal'
          : retryInMs === undefined
            ? 'step journaled'
            : 'step failed; it is tried again',
      ),
    onProblem: problemLogger(log),
    // A first execution is routine (every initialize, tools/list …): debug. One that runs again
    // (a retry, a takeover, a restart) is what an operator looks for: info.
    onExecution: (event) =>
      log[event.cause === 'first' ? 'debug' : 'info'](
        {
          session: event.session,
          stream: event.stream,
          attempt: event.attempt,
          cause: event.cause,
        },
        'execution started',
      ),
  };
}

/**
 * One line per tool execution: the tool, how it ended, how long it took, which attempt of which
 * stream — and, when it failed, the error with its stack (a cancelled one: its reason, at info).
 */
function logExecutionEnd(log: Logger, end: ExecutionEnd): void {
  const { tool, outcome, execution } = end;
  const fields = {
    tool,
    outcome,
    duration_ms: Math.round(end.durationMs),
    ...(execution === undefined
      ? {}
      : { session: execution.sessionId, stream: execution.stream, attempt: execution.attempt }),
    ...(end.error === undefined || outcome === 'cancelled' ? {} : { err: end.error }),
  };
  const message = `tool ${tool}: ${outcome}`;
  // A cancel is the client's choice, not a problem: its reason, no stack.
  if (outcome === 'cancelled') log.info({ ...fields, reason: messageOf(end.error) }, message);
  else if (outcome === 'ok' || outcome === 'asleep') log.info(fields, message);
  else if (outcome === 'failed') log.error(fields, message);
  else log.warn(fields, message);
}

/** A problem (and its error) as a warning line. */
export function problemLogger(log: Logger): (problem: string, error?: unknown) => void {
  return (problem, error) =>
    error === undefined ? log.warn(problem) : log.warn({ err: error }, problem);
}
