// Restart memory: a server restarted on the data of heavy use idles close to a fresh one, because
// startup reads only live state (indexes of the compacted topics, not their values; no history).
//   fresh idle RSS  →  heavy use (sessions, calls of many sizes)  →  restart on the same data  →  idle RSS
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from './load.ts';
import { PROBE_OPTIONS } from './memory.ts';
import {
  benchTopics,
  BIN,
  readMemory,
  ROOT,
  round,
  startChild,
  startWorkerAndGateway,
  type Child,
} from './support.ts';

export interface RestartOptions {
  targets: ReadonlyArray<'tidemark-embedded' | 'tidemark-kafka-1'>;
  brokers?: readonly string[];
  /** Sessions of the heavy use (each with one small call). */
  sessions: number;
  /** Large calls of the heavy use (10,000 events each). */
  largeCalls: number;
}

export interface RestartRow {
  target: string;
  process: string;
  freshRssBytes: number;
  restartedRssBytes: number;
  freshHeapBytes: number;
  restartedHeapBytes: number;
  /** restarted / fresh RSS: the goal is ≤ 1.3. */
  rssRatio: number;
}

const TOOLS = join(ROOT, 'test/bench/bench-tools.ts');
const SETTLE = ['--server-idle', '2s'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Started {
  url: string;
  processes: Array<{ name: string; child: Child }>;
}

/** Starts the target on its data (a dev directory, or a topic prefix and secret). */
type Starter = () => Promise<Started>;

function embedded(): Starter {
  const data = mkdtempSync(join(tmpdir(), 'tidemark-restart-'));
  return async () => {
    const { process, match } = await startChild(
      [BIN, 'dev', '--port', '0', '--data', data, '--tools', TOOLS, ...SETTLE],
      /MCP endpoint: (\S+)/,
      { TIDEMARK_LOG_LEVEL: 'warn', NODE_OPTIONS: PROBE_OPTIONS },
    );
    return { url: match[1]!, processes: [{ name: 'dev', child: process }] };
  };
}

async function kafka(brokers: readonly string[]): Promise<Starter> {
  const flags = await benchTopics(brokers, 'restart');
  const env = {
    TIDEMARK_SECRET: randomBytes(32).toString('hex'),
    TIDEMARK_LOG_LEVEL: 'warn',
    NODE_OPTIONS: PROBE_OPTIONS,
  };
  return () => startWorkerAndGateway(flags, env, { worker: ['--tools', TOOLS, ...SETTLE] });
}

/** One session with a call, then idle: what every reading starts from. */
async function settle(url: string): Promise<void> {
  const warm = new Session(url);
  await warm.initialize();
  await warm.ticker(5, 0);
  await sleep(5_000);
}

async function heavyUse(url: string, options: RestartOptions): Promise<void> {
  for (let i = 0; i < options.sessions; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, options.sessions - i) }, async () => {
        const session = new Session(url);
        await session.initialize();
        await session.ticker(100, 0);
      }),
    );
  const large = new Session(url);
  await large.initialize();
  for (let i = 0; i < options.largeCalls; i++) await large.ticker(10_000, 0);
}

export async function runRestart(options: RestartOptions): Promise<RestartRow[]> {
  const rows: RestartRow[] = [];
  for (const target of options.targets) {
    if (target === 'tidemark-kafka-1' && options.brokers === undefined)
      throw new Error('the Kafka restart needs brokers');
    const start = target === 'tidemark-embedded' ? embedded() : await kafka(options.brokers!);
    const first = await start();
    let fresh: Array<{ rss: number; heapUsed: number }>;
    try {
      await settle(first.url);
      fresh = await Promise.all(first.processes.map((p) => readMemory(p.child)));
      await heavyUse(first.url, options);
    } finally {
      for (const p of [...first.processes].reverse()) await p.child.stop();
    }
    const second = await start();
    try {
      await settle(second.url);
      const restarted = await Promise.all(second.processes.map((p) => readMemory(p.child)));
      second.processes.forEach((p, i) => {
        const row: RestartRow = {
          target,
          process: p.name,
          freshRssBytes: fresh[i]!.rss,
          restartedRssBytes: restarted[i]!.rss,
          freshHeapBytes: fresh[i]!.heapUsed,
          restartedHeapBytes: restarted[i]!.heapUsed,
          rssRatio: round(restarted[i]!.rss / fresh[i]!.rss, 2),
        };
        console.error(
          `restart ${target} ${p.name}: fresh ${round(row.freshRssBytes / 1048576, 1)} MB, after heavy use and a restart ${round(row.restartedRssBytes / 1048576, 1)} MB (${row.rssRatio}×)`,
        );
        rows.push(row);
      });
    } finally {
      for (const p of [...second.processes].reverse()) await p.child.stop();
    }
  }
  return rows;
}
