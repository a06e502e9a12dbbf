import type { ToolLogger } from '@tidemark/tools';

type Level = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<Level, number> = { debug: 20, info: 30, warn: 40, error: 50 };

/** Without a configured logger: JSON lines on stderr, info and above, in pino's format. */
export function stderrLogger(bindings: Record<string, unknown> = {}): ToolLogger {
  return lineLogger((line) => process.stderr.write(`${JSON.stringify(line)}\n`), bindings);
}

/** A tool's log line as `runTool` captures it: pino's fields, the level by name. */
export interface ToolLogLine {
  readonly level: Level;
  readonly msg: string | undefined;
  readonly [field: string]: unknown;
}

/** A logger whose lines (info and above) go to `write`, each with the bindings of its children. */
export function lineLogger(
  write: (line: Record<string, unknown> & { level: number }) => void,
  bindings: Record<string, unknown> = {},
): ToolLogger {
  const at =
    (level: Level) =>
    (first: Record<string, unknown> | string, message?: string): void => {
      if (LEVELS[level] < LEVELS.info) return;
      const fields = typeof first === 'string' ? {} : first;
      const msg = typeof first === 'string' ? first : message;
      write({ level: LEVELS[level], time: Date.now(), ...bindings, ...fields, msg });
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => lineLogger(write, { ...bindings, ...more }),
  };
}

/** pino's level number by name, for captured lines. */
export function levelName(level: number): Level {
  return (Object.keys(LEVELS) as Level[]).find((name) => LEVELS[name] === level) ?? 'info';
}

/** The worker's problems (`WorkerOptions.onProblem`'s default): one line each, to stderr. */
export function problemToStderr(problem: string, error?: unknown): void {
  const detail =
    error === undefined
      ? ''
      : `: ${error instanceof Error ? error.message : JSON.stringify(error)}`;
  process.stderr.write(`tidemark worker: ${problem}${detail}\n`);
}
