/**
 * tasks/ — the Tasks extension at the edge. `handleTaskMethod` answers `tasks/get`, `tasks/update` and
 * `tasks/cancel` from the task's head (`task-state.ts` owns reading it); `handleTaskStream`
 * serves `tasks/stream` (SEP-2694) from the log; `handleTaskListen` follows tasks on
 * `subscriptions/listen`.
 */
export { handleTaskMethod, isTaskMethod } from './task-lane.js';
export { handleTaskListen, listenedTaskIds } from './task-listen.js';
export { handleTaskStream } from './task-stream.js';
