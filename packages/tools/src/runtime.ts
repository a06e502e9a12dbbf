// For the runtime that runs tool modules (`@tidemark/worker` and its test harness), not for tool
// modules: it sets the execution `currentExecution()` returns.
export { runInExecution } from './execution.js';
