export { main } from './cli.js';
export type { CliIo } from './cli.js';
export { EXIT, UsageError } from './options.js';
export { createLogger, type Logger } from './logger.js';
