/**
 * `@tidemark/worker/harness`: the worker's own execution pieces, for `@tidemark/testing` — so a
 * module's test runs the code the worker runs (the tool server, the retries and the v1 bridge, the
 * step journal, the emitter, the tool logger, an event source's run), with no log. Not an API for
 * tool modules: they import `@tidemark/tools`, and their tests `@tidemark/testing`.
 */
export { emitterOf, sourceOccurrences } from './events/index.js';
export type { EmitterFor, RecordedOccurrence } from './events/index.js';
export {
  answerRecord,
  CallSteps,
  createToolServer,
  levelName,
  lineLogger,
  registerModule,
  SESSION_SERVER_VERSIONS,
  stepFetch,
  withCompensations,
} from './execution/index.js';
export type { ExecutionEnd, SignalHost, ToolLogLine } from './execution/index.js';
export { WORKER_DEFAULTS } from './worker-options.js';
