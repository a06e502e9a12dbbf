/**
 * A structured logger a tool writes to (`currentExecution().log`): pino's shape, so `tidemark`
 * hands its own (JSON lines stamped with the trace and span ids), and any pino-compatible logger
 * fits `WorkerOptions.logger`.
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

type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<Level, number> = { debug: 20, info: 30, warn: 40, error: 50 };

/** Without a configured logger: JSON lines on stderr, info and above, in pino's format. */
export function stderrLogger(bindings: Record<string, unknown> = {}): ToolLogger {
  const write =
    (level: Level) =>
    (first: Record<string, unknown> | string, message?: string): void => {
      if (LEVELS[level] < LEVELS.info) return;
      const fields = typeof first === 'string' ? {} : first;
      const msg = typeof first === 'string' ? first : message;
      const line = { level: LEVELS[level], time: Date.now(), ...bindings, ...fields, msg };
      process.stderr.write(`${JSON.stringify(line)}\n`);
    };
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (more) => stderrLogger({ ...bindings, ...more }),
  };
}
