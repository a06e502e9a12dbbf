// Renders a benchmark result (bench.json) as markdown tables and an SVG chart.
//   node test/bench/summary.ts [test/bench/results/bench.json]
import { tenantsTable, type TenantsResult } from './tenants.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderGoals } from './goals.ts';
import { updateReadme } from './readme-table.ts';
import type { LiveRow } from './live.ts';
import type { PathsResult } from './paths.ts';
import type { MemoryRow } from './memory.ts';
import type { RestartRow } from './restart.ts';
import type { ResumeRow, StormRow } from './resume.ts';

export interface Result {
  machine: Record<string, unknown>;
  smoke?: boolean;
  live?: LiveRow[];
  resume?: { rows: ResumeRow[]; storms: StormRow[] };
  memory?: MemoryRow[];
  restart?: RestartRow[];
  tenants?: TenantsResult;
  paths?: PathsResult;
  seconds?: number;
}

const table = (head: string[], rows: Array<Array<string | number>>) =>
  [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const n = (x: number) => x.toLocaleString('en-US');
const signed = (ms: number) => `${ms >= 0 ? '+' : '−'}${Math.abs(ms).toFixed(2)} ms`;
const ratio = (a: number, b: number | undefined) =>
  b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`;

const share = (a: number, b: number | undefined) =>
  b === undefined || b === 0 ? '—' : `${Math.round((100 * a) / b)}%`;

export function renderMarkdown(result: Result): string {
  const m = result.machine;
  const parts = [
    `Measured ${String(m['date']).slice(0, 10)} on ${String(m['cores'])} cores (${String(m['cpu'])}), Node ${String(m['node'])}; load generator and servers share the cores (columns "server cores" / "load cores").`,
  ];
  parts.push(renderGoals(result));
  if (result.live !== undefined) {
    const base = (clients: number) =>
      result.live!.find((r) => r.target === 'sdk-memory' && r.clients === clients);
    const floor = (clients: number) =>
      result.live!.find((r) => r.target === 'kafka-floor' && r.clients === clients);
    const ceiling = (clients: number) =>
      result.live!.find((r) => r.target === 'raw-socket' && r.clients === clients);
    parts.push(
      '**Live delivery** (tool emits → client reads; events/s unpaced, latency paced at one event per 20 ms per client)',
      table(
        [
          'target',
          'clients',
          'events/s',
          'vs SDK',
          'of raw socket',
          'p50 ms',
          'p99 ms',
          'p999 ms',
          'p50 over floor',
          'server cores',
          'load cores',
        ],
        result.live.map((r) => [
          r.target,
          r.clients,
          n(r.eventsPerSec),
          ratio(r.eventsPerSec, base(r.clients)?.eventsPerSec),
          share(r.eventsPerSec, ceiling(r.clients)?.eventsPerSec),
          r.latencyMs.p50,
          r.latencyMs.p99,
          r.latencyMs.p999,
          floor(r.clients) === undefined || r.target === 'kafka-floor'
            ? '—'
            : signed(r.latencyMs.p50 - floor(r.clients)!.latencyMs.p50),
          r.serverCores,
          r.loadCores,
        ]),
      ),
    );
  }
  if (result.resume !== undefined) {
    parts.push(
      '**Resume** (reconnecting GET → first replayed event, and → the end of the replay; a server that closes a stream its client reads too slowly makes the client resume again: "reconnects")',
      table(
        [
          'target',
          'replayed events',
          'first event p50 ms',
          'p99 ms',
          'replay end p50 ms',
          'p99 ms',
          'reconnects',
          'events received',
        ],
        result.resume.rows.map((r) => [
          r.target,
          n(r.replay),
          r.firstEventMs.p50,
          r.firstEventMs.p99,
          r.seamMs.p50,
          r.seamMs.p99,
          r.reconnects ?? 0,
          r.received === undefined || r.received === r.replay
            ? 'all'
            : `**${n(r.received)} of ${n(r.replay)}**`,
        ]),
      ),
      '**Reconnect storm** (every session resumes at once)',
      table(
        ['target', 'sessions', 'all resumed in ms', 'first event p99 ms'],
        result.resume.storms.map((s) => [
          s.target,
          n(s.sessions),
          n(s.allResumedMs),
          s.firstEventP99Ms,
        ]),
      ),
    );
  }
  if (result.memory !== undefined) {
    parts.push(
      '**Memory** (after a full GC; per session and per held-open SSE stream)',
      table(
        [
          'target',
          'process',
          'sessions',
          'heap / idle session',
          'RSS / idle session',
          'heap / live stream',
          'RSS / live stream',
        ],
        result.memory.map((r) => [
          r.target,
          r.process,
          n(r.sessions),
          kb(r.idleSessionHeapBytes),
          kb(r.idleSessionRssBytes),
          kb(r.liveStreamHeapBytes),
          kb(r.liveStreamRssBytes),
        ]),
      ),
    );
  }
  if (result.restart !== undefined) {
    const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
    parts.push(
      '**Restart after heavy use** (idle RSS after a full GC: fresh, then restarted on the same data)',
      table(
        [
          'target',
          'process',
          'fresh RSS',
          'restarted RSS',
          'ratio',
          'fresh heap',
          'restarted heap',
        ],
        result.restart.map((r) => [
          r.target,
          r.process,
          mb(r.freshRssBytes),
          mb(r.restartedRssBytes),
          `${r.rssRatio.toFixed(2)}×`,
          mb(r.freshHeapBytes),
          mb(r.restartedHeapBytes),
        ]),
      ),
    );
  }
  if (result.tenants !== undefined)
    parts.push(`**Noisy neighbour**\n\n${tenantsTable(result.tenants)}`);
  return parts.join('\n\n');
}

/** Horizontal bar panels: live events/s at the most clients, paced p50, resume end p50. */
export function renderSvg(result: Result): string {
  const panels: Array<{ title: string; unit: string; bars: Array<[string, number]> }> = [];
  if (result.live !== undefined && result.live.length > 0) {
    const most = Math.max(...result.live.map((r) => r.clients));
    const at = result.live.filter((r) => r.clients === most);
    panels.push({
      title: `Live delivery, ${most} clients (events/s, more is better)`,
      unit: '',
      bars: at.map((r) => [r.target, r.eventsPerSec]),
    });
    panels.push({
      title: `Live latency p50, ${most} clients (ms, less is better)`,
      unit: ' ms',
      bars: at.map((r) => [r.target, r.latencyMs.p50]),
    });
  }
  if (result.resume !== undefined && result.resume.rows.length > 0) {
    const replay = Math.max(...result.resume.rows.map((r) => r.replay).filter((x) => x <= 1_000));
    panels.push({
      title: `Resume of ${n(replay)} events, to the end of the replay (p50 ms, less is better)`,
      unit: ' ms',
      bars: result.resume.rows
        .filter((r) => r.replay === replay)
        .map((r) => [r.target, r.seamMs.p50]),
    });
  }
  const width = 760;
  const barHeight = 22;
  const label = 170;
  let y = 20;
  const body: string[] = [];
  for (const panel of panels) {
    body.push(`<text x="10" y="${y}" font-weight="bold">${panel.title}</text>`);
    y += 10;
    const max = Math.max(...panel.bars.map(([, v]) => v), 1);
    for (const [name, value] of panel.bars) {
      const w = Math.max(1, ((width - label - 120) * value) / max);
      const color = name.startsWith('tidemark')
        ? '#2b6cb0'
        : name === 'kafka-floor' || name === 'raw-socket'
          ? '#718096'
          : '#dd6b20';
      body.push(
        `<text x="10" y="${y + 15}">${name}</text>`,
        `<rect x="${label}" y="${y}" width="${w.toFixed(1)}" height="${barHeight - 4}" fill="${color}"/>`,
        `<text x="${(label + w + 6).toFixed(1)}" y="${y + 15}">${n(value)}${panel.unit}</text>`,
      );
      y += barHeight;
    }
    y += 24;
  }
  const m = result.machine;
  body.push(
    `<text x="10" y="${y}" fill="#555">${String(m['date']).slice(0, 10)}, ${String(m['cores'])} cores, Node ${String(m['node'])}; load generator and servers on the same machine</text>`,
  );
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 16}" font-family="sans-serif" font-size="13">\n<rect width="100%" height="100%" fill="white"/>\n${body.join('\n')}\n</svg>\n`;
}

export function writeSummary(result: unknown, dir: string, prefix = ''): string {
  const markdown = renderMarkdown(result as Result);
  writeFileSync(join(dir, `${prefix}SUMMARY.md`), `${markdown}\n\n![chart](${prefix}chart.svg)\n`);
  writeFileSync(join(dir, `${prefix}chart.svg`), renderSvg(result as Result));
  return markdown;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2] ?? 'test/bench/results/bench.json';
  const result: unknown = JSON.parse(readFileSync(file, 'utf8'));
  console.log(writeSummary(result, dirname(file)));
  const readme = process.argv.indexOf('--readme');
  if (readme > 0) updateReadme(result, process.argv[readme + 1] ?? 'docs/benchmarks/index.md');
}
