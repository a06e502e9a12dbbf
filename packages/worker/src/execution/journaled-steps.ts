import type { StepJournal } from '@tidemark/log';
import type { PartitionKey, StreamId } from '@tidemark/protocol';
import type { StepReport } from '@tidemark/tools';
import { CallSteps, type CallStepsOptions } from './steps.js';

/** The steps of a call journaled in the log: the worker's. */
export function journaledSteps(
  journal: StepJournal,
  session: PartitionKey,
  stream: StreamId,
  /** The attempt of the call's first generation in this process. */
  attempt: number,
  options: Pick<CallStepsOptions, 'maxStepBytes' | 'onRetry' | 'fenced' | 'stopped'> & {
    onStep?: ((step: CallStepReport) => void) | undefined;
    /** Look steps up in the journal even on a first generation (another stream's execution wrote it). */
    replay?: boolean | undefined;
  },
): CallSteps {
  const { onStep } = options;
  return new CallSteps({
    store: {
      get: (step) => journal.get(session, stream, step),
      put: (step, value) => journal.put(session, stream, step, value),
      list: () => journal.list(session, stream),
    },
    callId: `${session}/${stream}`,
    replay: attempt > 1 || options.replay === true,
    maxStepBytes: options.maxStepBytes,
    onRetry: options.onRetry,
    fenced: options.fenced,
    stopped: options.stopped,
    onStep: onStep === undefined ? undefined : (step) => onStep({ session, stream, ...step }),
  });
}

/** A step of a call on a worker, for the operator's log (`WorkerOptions.onStep`). */
export interface CallStepReport extends StepReport {
  readonly session: PartitionKey;
  readonly stream: StreamId;
}

/**
 * @deprecated Renamed `CallStepReport` ("event" is the Events extension's and the SSE id's word);
 * this alias goes in the next minor release.
 */
export type CallStepEvent = CallStepReport;
