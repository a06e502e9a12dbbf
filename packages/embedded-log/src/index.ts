export { EmbeddedLog } from './embedded-log.js';
export type { CleanupPolicy, EmbeddedLogOptions, EmbeddedTopicOptions } from './embedded-log.js';
