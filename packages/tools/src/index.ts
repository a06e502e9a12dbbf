// What a tool module imports: define the module, read the running call's execution (its log and
// its durable steps), ask for a retry. The worker runtime depends on this package; nothing here
// depends on the log, the telemetry or a client.
export {
  RETRY_DEFAULTS,
  RetryableToolError,
  compileRetryPolicy,
  defineToolModule,
  isRetryableError,
  taskSupportOf,
} from './tool-module.js';
export type {
  CompiledRetryPolicy,
  RetryPolicy,
  ToolModule,
  ToolModuleContext,
  V1ToolModule,
  V2ToolModule,
} from './tool-module.js';
export { currentExecution } from './execution.js';
export type { EmitFunction, EmitOptions, Execution } from './execution.js';
export { StepFailedError } from './steps.js';
export type { StepContext, StepError, StepEvent, StepReport, StepFunction } from './steps.js';
export { checkAgainst, defineEventType } from './event-types.js';
export type {
  EventReadContext,
  EventScope,
  EventSource,
  EventSourceContext,
  EventType,
  EventTypeDefinition,
  SourcedOccurrence,
} from './event-types.js';
export type { ToolLogger } from './tool-logger.js';
export type { V1McpServer } from './v1-server.js';
