export { McpRequestError, TaskCancelledError, TaskFailedError, TaskInputError } from './errors.js';
export { increasingProgress, onReset } from './session-lane.js';
export type { NotificationHost, ResetNotice } from './session-lane.js';
export { TaskClient } from './task-client.js';
export type { TaskClientOptions } from './task-client.js';
export type { FollowMode } from './task-follow.js';
export type { TaskView, ToolResult } from './task-view.js';
export { FileTaskStore, MemoryTaskStore } from './task-store.js';
export type { StoredTask, TaskStore } from './task-store.js';
