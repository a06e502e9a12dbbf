// `tidemark dev` (or `npm start`) as a real process, read until it prints its MCP endpoint.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Starts a command in its own process group (so npm and its node child die together). */
export function startDevServer(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): {
  child: ChildProcess;
  url: Promise<string>;
  /** Everything it printed so far. */
  output: () => string;
  kill: (signal: NodeJS.Signals) => void;
} {
  const child = spawn(command, args, {
    cwd: options.cwd ?? root,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no MCP endpoint printed in 60 s:\n${output}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /MCP endpoint: (http:\/\/\S+)/.exec(output);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${signal ?? code}) before printing its MCP endpoint:\n${output}`));
    });
  });
  // A server killed before it printed its endpoint is a rejection only for whoever awaits it.
  url.catch(() => undefined);
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  onTestFinished(() => kill('SIGKILL'));
  return { child, url, output: () => output, kill };
}
