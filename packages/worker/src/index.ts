export { WORKER_DEFAULTS, Worker } from './worker.js';
export type { WorkerOptions } from './worker.js';
export {
  RETRY_DEFAULTS,
  RetryableToolError,
  compileRetryPolicy,
  defineToolModule,
  isRetryableError,
  loadToolModules,
  toToolModule,
} from './tool-module.js';
export type {
  CompiledRetryPolicy,
  RetryPolicy,
  ToolModule,
  ToolModuleContext,
} from './tool-module.js';
export { OffsetTracker } from './offset-tracker.js';
export { currentExecution } from './execution.js';
export type { Execution } from './execution.js';
