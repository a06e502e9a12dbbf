// What the three serving commands share: tool modules named on the command line, the lines they
// announce, and a worker started or its log closed.

import type { Server } from 'node:http';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Worker } from '@tidemark/worker';
import type { Io } from '../io.js';

export const DEFAULT_EXAMPLES = ['@tidemark/examples/counting', '@tidemark/examples/interactive'];

export function toolSpecifiers(
  tools: readonly string[],
  cwd: string,
  fallback: readonly string[],
): string[] {
  const chosen = tools.length > 0 ? tools : fallback;
  return chosen.map((spec) =>
    spec.startsWith('.') || isAbsolute(spec) ? pathToFileURL(resolve(cwd, spec)).href : spec,
  );
}

/** The URLs dev serves; test helpers and users read `MCP endpoint:` and `Console:`. */
export function announceEndpoints(io: Io, host: string, port: number, consolePath?: string): void {
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  io.out(`MCP endpoint: ${origin}/mcp`);
  if (consolePath !== undefined) io.out(`Console: ${origin}${consolePath} (this machine only)`);
}

export function announce(io: Io, line: string | undefined): void {
  if (line !== undefined) io.out(line);
}

export function portOf(server: Server): number {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** Starts the worker; when it cannot start (a tool module failed its probe), the log is closed. */
export async function startOrClose(worker: Worker, log: { close(): Promise<void> }): Promise<void> {
  try {
    await worker.start();
  } catch (error) {
    await log.close().catch(() => undefined);
    throw error;
  }
}
