// For the runtime that runs tool modules (`@tidemark/worker` and its test harness), not for tool
// modules: it sets the execution `currentExecution()` returns, and reads a step's retry policy.
export { runInExecution } from './execution.js';
export { compileStepRetry, stepRetryDelay } from './steps.js';
export type { CompiledStepRetry } from './steps.js';
