import type { Logger } from './logger.js';

/** What a command is given of its process: environment, directory, output, the stop, the log. */
export interface Io {
  env: NodeJS.ProcessEnv;
  cwd: string;
  out: (line: string) => void;
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  stopSignal: Promise<void>;
  /** The structured log (problems, executions), correlated with traces. */
  logger: Logger;
}
