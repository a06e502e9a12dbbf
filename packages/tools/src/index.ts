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
export { currentExecution, FetchStatusError } from './execution.js';
export type {
  CompensateFunction,
  EmitFunction,
  EmitOptions,
  Execution,
  SleepFunction,
  StepFetch,
} from './execution.js';
export { SignalTimeoutError } from './signals.js';
export type { Signal, SignalAnswer, SignalFunction, SignalOptions } from './signals.js';
export { NonRetryableError, STEP_RETRY_DEFAULTS, StepFailedError } from './steps.js';
export type {
  StepContext,
  StepError,
  StepEvent,
  StepFunction,
  StepOptions,
  StepReport,
  StepRetryPolicy,
} from './steps.js';
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
