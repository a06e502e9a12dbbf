/**
 * execution/ — one execution of a call, whatever lane runs it; this room knows no lane.
 *
 * `decideRun` says whether a request runs here now: done, refused (past the poison-call bound, or
 * its session running all it may) or run as the next generation. `CallExecution` is a call
 * running here, on any lane: the generations of its stream (stamps, seq, the terminal written
 * until it is in; retries as the next generation), its step journal (`CallSteps`) and the
 * `Execution` its tool sees; it runs in the `CallEnvironment` the worker builds once. A tool
 * asleep (`ex.sleep`, sleep.ts) leaves its invocation; `untilAnswered` runs it again on time.
 * `registerModule` wraps each tool so the `Execution` it sees (steps, retries, emit, logger) is
 * built the same on every lane. `createToolServer` is the SDK server tools register on;
 * `invokeStateless` runs one request on a fresh one.
 */
export { whileUnavailable } from './backoff.js';
export type { CallEnvironment, ExecutionStart } from './call-environment.js';
export { CallExecution, notOwned } from './call-execution.js';
export { decideRun } from './run-decision.js';
export type { RunLimits } from './run-decision.js';
export { lastProgressInLog } from './progress-continuity.js';
export { registerModule } from './retries.js';
export type { ExecutionEnd } from './retries.js';
export { invokeStateless } from './stateless-invocation.js';
export { Asleep } from './sleep.js';
export { SignalDesk, restKey } from './signal-desk.js';
export { answerRecord } from './signal.js';
export type { AskedSignal, SignalHost } from './signal.js';
export { CallSteps } from './steps.js';
export { withCompensations } from './compensations.js';
export { stepFetch } from './step-fetch.js';
export type { CallStepEvent, CallStepReport } from './journaled-steps.js';
export { levelName, lineLogger, problemToStderr, stderrLogger } from './tool-logger.js';
export type { ToolLogLine } from './tool-logger.js';
export { SESSION_SERVER_VERSIONS, authInfoOf, createToolServer } from './tool-server.js';
export { ScopeChecker } from './scope-checker.js';
export { toolCallOf, writeAudit } from './call-audit.js';
export type { CallEnd } from './call-audit.js';
export type { ServerIdentity } from './tool-server.js';
