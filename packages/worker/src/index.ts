export { Worker } from './worker.js';
export { WORKER_DEFAULTS } from './worker-options.js';
export type { ExecutionEvent, WorkerOptions } from './worker-options.js';
export type { ExecutionEnd } from './retries.js';
export type { SlotKind, SlotOccupancy } from './call-slots.js';
export type { ToolLogger } from './tool-logger.js';
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
  V1ToolModule,
  V2ToolModule,
} from './tool-module.js';
export type { V1McpServer } from './v1-server.js';
export { probeToolModules } from './module-probe.js';
export type { ModuleListing } from './module-probe.js';
export { currentExecution } from './execution.js';
export type { Execution } from './execution.js';
export { StepFailedError } from './steps.js';
export type { CallStepEvent, StepContext, StepEvent, StepFunction } from './steps.js';
