import { rmSync } from 'node:fs';
import { EXIT, main } from '@tidemark/cli';
import { pino } from 'pino';
import { expect, vi } from 'vitest';

/** `tidemark dev` run by the CLI's `main` in this process: its endpoint, its output and log lines. */
export interface DevInProcess {
  readonly url: string;
  /** What the command printed (stdout and stderr, in order). */
  readonly out: readonly string[];
  /** Its structured log, one pino line each (debug and above). */
  readonly lines: readonly string[];
  /** Asks it to stop, expects a clean exit and removes `dir`; once. */
  stop(): Promise<void>;
}

/** Runs `tidemark dev` with `args` in `dir` until it prints its endpoint. */
export async function devInProcess(dir: string, args: readonly string[]): Promise<DevInProcess> {
  const lines: string[] = [];
  const out: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  let signal!: () => void;
  const running = main(['dev', ...args], {
    env: {},
    cwd: dir,
    out: (line) => out.push(line),
    err: (line) => out.push(line),
    stopSignal: new Promise<void>((resolve) => (signal = resolve)),
    logger,
  });
  const endpoint = () => out.find((l) => l.startsWith('MCP endpoint: '));
  await vi.waitFor(() => expect(endpoint()).toBeDefined(), { timeout: 20_000 });
  let stopped = false;
  return {
    url: endpoint()!.slice('MCP endpoint: '.length),
    out,
    lines,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      signal();
      expect(await running).toBe(EXIT.ok);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
