// The benchmarks page's performance table and its targets, written from one `npm run bench` result
// (`node test/bench/summary.ts docs/benchmarks/bench.json --readme docs/benchmarks/index.md`).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderGoals } from './goals.ts';
import type { Result } from './summary.ts';

const n = (x: number) => x.toLocaleString('en-US');

const COLUMNS = [
  ['sdk-memory', 'SDK in-memory'],
  ['sdk-redis', 'SDK + Redis'],
  ['tidemark-embedded', 'Tidemark embedded'],
  ['tidemark-kafka-1', 'Tidemark Kafka ×1'],
  ['tidemark-kafka-2', 'Tidemark Kafka ×2'],
  ['kafka-floor', 'Kafka floor'],
  ['raw-socket', 'Raw socket'],
] as const;

/** The benchmarks page's performance table, from one run (`summary.ts <bench.json> --readme docs/benchmarks/index.md`). */
function renderReadmeTable(result: Result): string {
  const cell = (fn: (target: string) => string | undefined) =>
    COLUMNS.map(([target]) => fn(target) ?? '');
  const live = (target: string, clients: number) =>
    result.live?.find((r) => r.target === target && r.clients === clients);
  const maxClients = Math.max(0, ...(result.live ?? []).map((r) => r.clients));
  const resume = (target: string, replay: number) =>
    result.resume?.rows.find((r) => r.target === target && r.replay === replay);
  const storm = (target: string) => result.resume?.storms.find((s) => s.target === target);
  const memory = (target: string, process: string) =>
    (result.memory ?? [])
      .filter((m) => m.target === target && m.process === process)
      .sort((a, b) => b.sessions - a.sessions)[0];
  const kbOf = (bytes: number) => (Math.max(0, bytes) / 1024).toFixed(1);
  const rows: Array<[string, string[]]> = [
    [`live events/s, ${maxClients} clients`, cell((t) => n0(live(t, maxClients)?.eventsPerSec))],
    [
      'live events/s per server core, 10 clients',
      cell((t) => {
        const r = live(t, 10);
        return r === undefined || r.serverCores <= 0
          ? undefined
          : n(Math.round(r.eventsPerSec / r.serverCores));
      }),
    ],
    [
      'live latency p50 / p99, 1 client (ms)',
      cell((t) => {
        const r = live(t, 1);
        return r === undefined ? undefined : `${r.latencyMs.p50} / ${r.latencyMs.p99}`;
      }),
    ],
    [
      'resume of 1,000 events: first event / end, p50 (ms)',
      cell((t) => {
        const r = resume(t, 1_000);
        return r === undefined ? undefined : `${r.firstEventMs.p50} / ${r.seamMs.p50}`;
      }),
    ],
    [
      'resume of 100,000 events: end p50 (ms)',
      cell((t) => {
        const r = resume(t, 100_000);
        if (r === undefined) return undefined;
        const lost = r.received < r.replay ? ` (**${n(r.replay - r.received)} events lost**)` : '';
        return `${n(Math.round(r.seamMs.p50))}${lost}`;
      }),
    ],
    [
      'sessions resuming at once: all done (ms)',
      cell((t) => {
        const s = storm(t);
        return s === undefined ? undefined : `${n(s.allResumedMs)} (${n(s.sessions)})`;
      }),
    ],
    [
      'heap per idle session / per live stream (KB)',
      cell((t) => {
        if (t === 'tidemark-kafka-1') {
          const g = memory(t, 'gateway');
          const w = memory(t, 'worker');
          return g === undefined
            ? undefined
            : `gateway ${kbOf(g.idleSessionHeapBytes)} / ${kbOf(g.liveStreamHeapBytes)}, worker ${kbOf(w?.idleSessionHeapBytes ?? 0)}`;
        }
        const m = memory(t, 'server');
        return m === undefined
          ? undefined
          : `${kbOf(m.idleSessionHeapBytes)} / ${kbOf(m.liveStreamHeapBytes)}`;
      }),
    ],
    [
      'survives a process restart, scales out, never splices',
      ['no', 'replay only', 'restart', 'yes', 'yes', ''],
    ],
  ];
  return [
    `| | ${COLUMNS.map(([, title]) => title).join(' | ')} |`,
    `| --- | ${COLUMNS.map(() => '---').join(' | ')} |`,
    ...rows.map(([what, cells]) => `| ${what} | ${cells.join(' | ')} |`),
  ].join('\n');
}

const n0 = (x: number | undefined) => (x === undefined ? undefined : n(x));

/** Replaces what is between `<!-- name:start -->` and `<!-- name:end -->` in a text. */
function replaceBlock(text: string, name: string, content: string, file: string): string {
  const [open, close] = [`<!-- ${name}:start -->`, `<!-- ${name}:end -->`];
  const start = text.indexOf(open);
  const end = text.indexOf(close);
  if (start < 0 || end < start) throw new Error(`${file}: no ${open} … ${close}`);
  return `${text.slice(0, start + open.length)}\n${content}\n${text.slice(end)}`;
}

/** Replaces the benchmarks page's table and its targets with this run's. */
export function updateReadme(result: unknown, readme: string): void {
  const text = readFileSync(readme, 'utf8');
  const table = replaceBlock(text, 'bench-table', renderReadmeTable(result as Result), readme);
  writeFileSync(readme, replaceBlock(table, 'bench-goals', renderGoals(result as Result), readme));
}
