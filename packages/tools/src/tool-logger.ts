/**
 * A structured logger a tool writes to (`currentExecution().log`): pino's shape, so `tidemark`
 * hands its own (JSON lines stamped with the trace and span ids), and any pino-compatible logger
 * fits the worker's `logger` option.
 */
export interface ToolLogger {
  debug(fields: Record<string, unknown>, message?: string): void;
  debug(message: string): void;
  info(fields: Record<string, unknown>, message?: string): void;
  info(message: string): void;
  warn(fields: Record<string, unknown>, message?: string): void;
  warn(message: string): void;
  error(fields: Record<string, unknown>, message?: string): void;
  error(message: string): void;
  child(bindings: Record<string, unknown>): ToolLogger;
}
