import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A child process of a test that prints JSON lines; killed when the test ends. */
export interface TestProcess {
  readonly child: ChildProcess;
  /** Every JSON line printed so far. */
  readonly events: Array<Record<string, unknown>>;
  /** Resolves with the first printed event that satisfies `match`. */
  waitFor(
    match: (event: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  readonly stderr: string[];
}

export function startProcess(
  onFinished: (fn: () => void) => void,
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; onEvent?: (event: Record<string, unknown>) => void } = {},
): TestProcess {
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  });
  const events: Array<Record<string, unknown>> = [];
  const stderr: string[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    events.push(event);
    options.onEvent?.(event);
    for (const wake of waiters) wake();
  });
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  onFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    child,
    events,
    stderr,
    waitFor: (match, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = events.find(match);
          if (found === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `timed out waiting for a line from ${args[0] ?? command}; stderr: ${stderr.join('').slice(-2000)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
  };
}

export const supportScript = (name: string) => fileURLToPath(new URL(name, import.meta.url));
