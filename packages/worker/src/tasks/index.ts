/**
 * tasks/ — the Tasks extension. `TaskExecution` owns one task: its executions in the task's own
 * stream, its input rounds, its cancellation. Tasks are made only by the stateless lane.
 */
export { TaskExecution } from './task-execution.js';
