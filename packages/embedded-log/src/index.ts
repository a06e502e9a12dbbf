export { EmbeddedLog } from './embedded-log.js';
export type { EmbeddedLogOptions, EmbeddedTopicLayout } from './embedded-log.js';
export type { EmbeddedTopicOptions } from './partition-store.js';
export type { CleanupPolicy } from './schema.js';
