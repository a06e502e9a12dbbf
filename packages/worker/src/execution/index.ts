/**
 * execution/ — one execution of a call, whatever lane runs it; this room knows no lane.
 *
 * `decideRun` says whether a request runs here now: done, refused (past the poison-call bound)
 * or run as the next generation. `StreamRun` owns a generation's writes to the call's stream —
 * stamps, seq, the terminal — and retries as the next generation. `CallSteps` owns the step
 * journal. `registerModule` wraps each tool so the `Execution` it sees (steps, retries, emit,
 * logger) is built the same on every lane. `createToolServer` is the SDK server tools register
 * on; `invokeStateless` runs one request on a fresh one.
 */
export { backoff, whileUnavailable } from './backoff.js';
export { callRefusal } from './call-refusal.js';
export { lastProgressInLog } from './progress-continuity.js';
export { registerModule } from './retries.js';
export type { ExecutionEnd } from './retries.js';
export { decideRun } from './run-decision.js';
export type { RunDecision } from './run-decision.js';
export { invokeStateless } from './stateless-invocation.js';
export type { InvocationOptions } from './stateless-invocation.js';
export { CallSteps, journaledSteps } from './steps.js';
export type { CallStepEvent } from './steps.js';
export { StreamRun, notOwned } from './stream-run.js';
export type { StreamRunHost } from './stream-run.js';
export { levelName, lineLogger, stderrLogger } from './tool-logger.js';
export type { ToolLogLine } from './tool-logger.js';
export { SESSION_SERVER_VERSIONS, authInfoOf, createToolServer } from './tool-server.js';
export type { ServerIdentity } from './tool-server.js';
