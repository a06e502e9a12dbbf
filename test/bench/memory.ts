// Memory: heap and RSS of the server processes per idle session and per live stream (a held-open
// SSE stream), read after a full GC in each process (memory-probe.ts).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Session } from './load.ts';
import { readMemory, ROOT, round } from './support.ts';
import { startTarget, type Target, type TargetName } from './targets.ts';

export interface MemoryOptions {
  targets: readonly TargetName[];
  counts: readonly number[];
  /** Wait before each reading, for idle sessions' MCP servers to be dropped (`--server-idle 2s`). */
  settleMs: number;
  brokers?: readonly string[];
}

export interface MemoryRow {
  target: string;
  /** gateway, worker, or the one process (sdk, embedded). */
  process: string;
  sessions: number;
  idleSessionHeapBytes: number;
  idleSessionRssBytes: number;
  liveStreamHeapBytes: number;
  liveStreamRssBytes: number;
}

export const PROBE_OPTIONS = `--import=${pathToFileURL(join(ROOT, 'test/bench/memory-probe.ts')).href}`;

interface Reading {
  rss: number;
  heapUsed: number;
}

function read(target: Target): Promise<Reading[]> {
  return Promise.all(target.processes.map((p) => readMemory(p)));
}

const roleOf = (target: Target, i: number) =>
  target.name.startsWith('tidemark-kafka') ? (i === 0 ? 'worker' : 'gateway') : 'server';

export async function runMemory(options: MemoryOptions): Promise<MemoryRow[]> {
  const rows: MemoryRow[] = [];
  for (const name of options.targets) {
    for (const count of options.counts) {
      const target = await startTarget(name, {
        ...(options.brokers ? { brokers: options.brokers } : {}),
        nodeOptions: PROBE_OPTIONS,
        serverIdle: '2s',
      });
      const streams = new AbortController();
      try {
        const warm = new Session(target.urls[0]!);
        await warm.initialize();
        await warm.ticker(5, 0);
        await new Promise((resolve) => setTimeout(resolve, options.settleMs));
        const base = await read(target);
        const sessions: Session[] = [];
        for (let i = 0; i < count; i += 100)
          sessions.push(
            ...(await Promise.all(
              Array.from({ length: Math.min(100, count - i) }, async () => {
                const s = new Session(target.urls[0]!);
                await s.initialize();
                return s;
              }),
            )),
          );
        // Settled: idle sessions' MCP servers are dropped after --server-idle (2 s here).
        await new Promise((resolve) => setTimeout(resolve, options.settleMs));
        const idle = await read(target);
        for (let i = 0; i < sessions.length; i += 200)
          await Promise.all(sessions.slice(i, i + 200).map((s) => s.listen(streams.signal)));
        await new Promise((resolve) => setTimeout(resolve, 500));
        const live = await read(target);
        target.processes.forEach((_, i) => {
          const [b, d, l] = [base[i]!, idle[i]!, live[i]!];
          const row = {
            target: name,
            process: roleOf(target, i),
            sessions: count,
            idleSessionHeapBytes: round((d.heapUsed - b.heapUsed) / count, 0),
            idleSessionRssBytes: round((d.rss - b.rss) / count, 0),
            liveStreamHeapBytes: round((l.heapUsed - d.heapUsed) / count, 0),
            liveStreamRssBytes: round((l.rss - d.rss) / count, 0),
          };
          console.error(
            `memory ${name} ${row.process} ×${count}: ${row.idleSessionHeapBytes} B heap/idle session, ${row.liveStreamHeapBytes} B heap/live stream`,
          );
          rows.push(row);
        });
      } finally {
        streams.abort();
        await target.stop();
      }
    }
  }
  return rows;
}
