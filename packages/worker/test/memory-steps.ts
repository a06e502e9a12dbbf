import type { StepRecord } from '@tidemark/log';
import { CallSteps, type CallStepsOptions } from '../src/execution/steps.js';

/**
 * A call's steps over a journal in memory (what `runTool` keeps): the worker's own `CallSteps`, for
 * tests of steps without a log. `journal` is the test's to read and to hand to a later execution.
 */
export function memorySteps(
  journal: Map<string, StepRecord>,
  options: Partial<Omit<CallStepsOptions, 'store'>> & Pick<CallStepsOptions, 'replay'>,
): CallSteps {
  return new CallSteps({
    store: {
      get: (step) => Promise.resolve(journal.get(step)),
      put: (step, value) => Promise.resolve(void journal.set(step, value)),
      list: () => Promise.resolve([...journal].map(([step, record]) => ({ step, ...record }))),
    },
    callId: 's/1',
    maxStepBytes: 64 * 1024,
    ...options,
  });
}
