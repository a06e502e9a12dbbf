export { Worker } from './worker.js';
export { WORKER_DEFAULTS } from './worker-options.js';
export type { ExecutionEvent, WorkerOptions } from './worker-options.js';
export type { ExecutionStart } from './execution/index.js';
export type { ExecutionEnd } from './execution/index.js';
export type { SlotKind, SlotOccupancy } from './calls/index.js';
export { loadToolModules, toToolModule } from './modules/index.js';
export { probeToolModules } from './modules/index.js';
export { hostedServerModule, hostedServerSpecs } from './hosted/index.js';
export type { HostedServerModule, HostedServerSpec } from './hosted/index.js';
// What a worker checks of its topics at start, for `tidemark topics check` to say it too.
export { checkPartitionPlacement } from '@tidemark/log';
export type { ModuleListing } from './modules/index.js';
export type { CallStepEvent, CallStepReport } from './execution/index.js';

// The authoring API moved to @tidemark/tools (#34): tool modules import it from there. These names
// stay here for one release so that modules written against @tidemark/worker keep working.
/** @deprecated Import from `@tidemark/tools`. */
export {
  RETRY_DEFAULTS,
  RetryableToolError,
  StepFailedError,
  compileRetryPolicy,
  currentExecution,
  defineToolModule,
  isRetryableError,
} from '@tidemark/tools';
/** @deprecated Import from `@tidemark/tools`. */
export type {
  CompiledRetryPolicy,
  Execution,
  RetryPolicy,
  StepContext,
  StepEvent,
  StepReport,
  StepFunction,
  ToolLogger,
  ToolModule,
  ToolModuleContext,
  V1McpServer,
  V1ToolModule,
  V2ToolModule,
} from '@tidemark/tools';
