// What the benchmarks share: child processes of the CLI, percentiles, and the result files.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statelessRequest } from '@tidemark/protocol';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(ROOT, 'packages/cli/dist/bin.js');

export interface Child {
  readonly child: ChildProcess;
  /** Everything printed on stdout and stderr so far. */
  output(): string;
  /** Ends the process (SIGTERM, then SIGKILL after 5 s); resolves when it exited. */
  stop(): Promise<void>;
}

/**
 * Starts a process (Node by default) and resolves once its output matches `ready` (with the
 * match); fails with its output when it exits or does not get there in 60 s.
 */
export async function startChild(
  args: readonly string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
  command: string = process.execPath,
): Promise<{ process: Child; match: RegExpExecArray }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));
  const handle: Child = {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = ready.exec(output);
    if (match !== null) return { process: handle, match };
    if (spawnError !== undefined) throw new Error(`${command}: ${spawnError.message}`);
    if (child.exitCode !== null || Date.now() > deadline) {
      await handle.stop();
      throw new Error(`${command} ${args.join(' ')} did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `tidemark dev` on a fresh data directory; its MCP endpoint. */
export async function startDev(
  env: NodeJS.ProcessEnv = {},
  extra: readonly string[] = [],
): Promise<{ process: Child; url: string }> {
  const data = mkdtempSync(join(tmpdir(), 'tidemark-bench-'));
  const { process, match } = await startChild(
    [BIN, 'dev', '--port', '0', '--data', data, ...extra],
    /MCP endpoint: (\S+)/,
    env,
  );
  return { process, url: match[1]! };
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}

/** The median of numbers (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** The machine a figure was measured on, written next to every result. */
export function machine(): Record<string, unknown> {
  return {
    date: new Date().toISOString(),
    node: process.version,
    cores: cpus().length,
    cpu: cpus()[0]?.model,
  };
}

export function writeResult(path: string, result: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
}

/** Fresh topics under a random prefix on the benchmark's broker; the CLI flags that name them. */
export async function benchTopics(brokers: readonly string[], label = 'bench'): Promise<string[]> {
  const prefix = `${label}-${randomBytes(4).toString('hex')}.`;
  const flags = ['--brokers', brokers.join(','), '--prefix', prefix];
  await promisify(execFile)(process.execPath, [
    BIN,
    'topics',
    'create',
    ...flags,
    '--partitions',
    '4',
    '--replication-factor',
    '1',
  ]);
  return flags;
}

/** Heap and RSS of a server process after a full GC: the memory probe answers SIGUSR2. */
/** A server process's memory as memory-probe.ts reads it (bytes). */
export interface MemoryReading {
  rss: number;
  heapUsed: number;
  external: number;
  /** The pages V8 held before the reading's GC (garbage and free space included). */
  heapTotal: number;
  /** The pages V8 holds once collected: what the live heap costs in RSS, headroom included. */
  heapTotalAfterGc: number;
  /** RSS backed by files (the node binary's code) and anonymous (heap, malloc). */
  rssFile: number;
  rssAnon: number;
}

export async function readMemory(child: Child): Promise<MemoryReading> {
  const before = child.output().length;
  child.child.kill('SIGUSR2');
  const deadline = Date.now() + 10_000;
  for (;;) {
    const line = /\{"memory":(\{[^}]*\})\}/.exec(child.output().slice(before));
    if (line !== null) return JSON.parse(line[1]!) as MemoryReading;
    if (Date.now() > deadline) throw new Error('no memory reading from a server process');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A `tidemark worker` and a `tidemark gateway` (no auth, no rate limit: the load generator is one
 * client address) on the topics `flags` names; extra flags for each.
 */
export async function startWorkerAndGateway(
  flags: readonly string[],
  env: NodeJS.ProcessEnv,
  extra: { worker: readonly string[]; gateway?: readonly string[] },
): Promise<{ url: string; processes: Array<{ name: string; child: Child }> }> {
  const worker = await startChild([BIN, 'worker', ...flags, ...extra.worker], /started/, env);
  // A gateway that does not start leaves no worker behind (it would stay in the group).
  const gateway = await startChild(
    [
      BIN,
      'gateway',
      '--auth',
      'none',
      '--port',
      '0',
      '--max-requests-per-second',
      '100000',
      ...flags,
      ...(extra.gateway ?? []),
    ],
    /listening on port (\d+)/,
    env,
  ).catch(async (error: unknown) => {
    await worker.process.stop();
    throw error;
  });
  return {
    url: `http://127.0.0.1:${gateway.match[1]}/mcp`,
    processes: [
      { name: 'worker', child: worker.process },
      { name: 'gateway', child: gateway.process },
    ],
  };
}

/**
 * One 2026-07-28 request (no session) answered as JSON, from a client named `client` declaring
 * `capabilities`: the result, or a thrown error naming the method and what was answered.
 */
export async function statelessRpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  client: { name: string; capabilities: Record<string, unknown> },
): Promise<Record<string, unknown>> {
  const { headers, body } = statelessRequest(method, params, {
    clientInfo: { name: client.name, version: '1' },
    capabilities: client.capabilities,
    name: typeof params['name'] === 'string' ? params['name'] : method,
  });
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, Accept: 'application/json' },
    body,
  });
  const answer = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (answer.result === undefined) throw new Error(`${method}: ${JSON.stringify(answer)}`);
  return answer.result;
}
