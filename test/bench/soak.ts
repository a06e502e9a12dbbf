// `npm run soak`: Tidemark under a steady churn for a bounded time, sampling the RSS, heap and disk
// of every server process, to show that memory and disk follow what is live, not what was seen.
//
//   npm run soak                       # 10 minutes, embedded and Kafka
//   npm run soak -- --minutes 3 --targets tidemark-embedded
//
// Sessions come and go (half end with DELETE, half are abandoned and expire by their TTL), calls
// of many sizes run, a fifth of them drop mid-stream and resume with Last-Event-ID, and stateless
// (2026-07-28) requests come in between. TTLs and the resume window are short (20 s, 1 min) so the
// run reaches its steady state within a few minutes. The slope of each series over the second half
// of the run (MB per hour) is the figure: at steady state it is about 0.
//
// Writes docs/benchmarks/soak.json and docs/benchmarks/soak.svg, and prints the table.
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { HEADERS, Session } from './load.ts';
import { PROBE_OPTIONS } from './memory.ts';
import {
  benchTopics,
  BIN,
  machine,
  readMemory,
  ROOT,
  round,
  startChild,
  startWorkerAndGateway,
  writeResult,
  type Child,
} from './support.ts';
import { MODERN_META, readSse } from '../support/sse.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    targets: { type: 'string', default: 'tidemark-embedded,tidemark-kafka' },
    clients: { type: 'string', default: '8' },
    'sample-seconds': { type: 'string', default: '5' },
    out: { type: 'string', default: 'docs/benchmarks' },
  },
});
const minutes = Number(values.minutes);
const clients = Number(values.clients);
const sampleMs = Number(values['sample-seconds']) * 1000;
const targets = values.targets.split(',');
for (const [name, n] of [
  ['--minutes', minutes],
  ['--clients', clients],
  ['--sample-seconds', sampleMs],
] as const)
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`soak: ${name} takes a positive number`);
    process.exit(2);
  }
for (const t of targets)
  if (t !== 'tidemark-embedded' && t !== 'tidemark-kafka') {
    console.error(`soak: --targets takes tidemark-embedded, tidemark-kafka; got ${t}`);
    process.exit(2);
  }

const TOOLS = join(ROOT, 'test/bench/bench-tools.ts');
const EXPIRY = ['--session-ttl', '20s', '--result-ttl', '20s', '--server-idle', '10s'];

interface Sample {
  /** Seconds since the load started. */
  t: number;
  rss: number;
  heapUsed: number;
  /** Memory of Buffers and other objects outside the JS heap (after the same GC). */
  external: number;
  /** Bytes of the process's data on disk (the embedded log's files), when it has any. */
  disk?: number;
}

interface Series {
  target: string;
  process: string;
  samples: Sample[];
}

interface Counts {
  sessions: number;
  calls: number;
  resumes: number;
  stateless: number;
  errors: number;
  lastError?: string;
}

interface Running {
  urls: string[];
  processes: Array<{ name: string; child: Child; dataDir?: string }>;
  stop(): Promise<void>;
}

async function startEmbedded(): Promise<Running> {
  const data = mkdtempSync(join(tmpdir(), 'tidemark-soak-'));
  const { process, match } = await startChild(
    [
      BIN,
      'dev',
      '--port',
      '0',
      '--data',
      data,
      '--tools',
      TOOLS,
      '--resume-window',
      '1m',
      '--max-requests-per-second',
      '100000',
      ...EXPIRY,
    ],
    /MCP endpoint: (\S+)/,
    { TIDEMARK_LOG_LEVEL: 'warn', NODE_OPTIONS: PROBE_OPTIONS },
  );
  return {
    urls: [match[1]!],
    processes: [{ name: 'dev', child: process, dataDir: data }],
    stop: () => process.stop(),
  };
}

async function startKafka(brokers: readonly string[]): Promise<Running> {
  const kafka = await benchTopics(brokers, 'soak');
  const env = {
    TIDEMARK_SECRET: randomBytes(32).toString('hex'),
    TIDEMARK_LOG_LEVEL: 'warn',
    NODE_OPTIONS: PROBE_OPTIONS,
  };
  const { url, processes } = await startWorkerAndGateway(kafka, env, {
    worker: ['--tools', TOOLS, ...EXPIRY],
    gateway: ['--session-ttl', '20s'],
  });
  return {
    urls: [url],
    processes,
    stop: async () => {
      for (const p of [...processes].reverse()) await p.child.stop();
    },
  };
}

const random = (n: number) => Math.floor(Math.random() * n);

/** One virtual client: sessions that come and go, calls of many sizes, drops and resumes. */
async function client(url: string, until: number, counts: Counts): Promise<void> {
  while (Date.now() < until) {
    try {
      const session = new Session(url);
      await session.initialize();
      counts.sessions++;
      for (let c = 1 + random(4); c > 0 && Date.now() < until; c--) {
        const n = [5, 50, 500, 2_000][random(4)]!;
        if (Math.random() < 0.2) {
          const cut = await session.ticker(n, 0, undefined, Math.max(1, random(n)));
          if (!cut.finished && cut.ids.length > 0) {
            await session.resumeToEnd(cut.ids.at(-1)!);
            counts.resumes++;
          }
        } else await session.ticker(n, 0);
        counts.calls++;
      }
      await stateless(url);
      counts.stateless++;
      // Half the sessions end; the other half are abandoned and expire.
      if (Math.random() < 0.5)
        await fetch(url, {
          method: 'DELETE',
          headers: { 'Mcp-Session-Id': session.id, 'MCP-Protocol-Version': '2025-11-25' },
        }).then((response) => response.text());
    } catch (error) {
      counts.errors++;
      counts.lastError = error instanceof Error ? error.message : String(error);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function stateless(url: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, 'MCP-Protocol-Version': '2026-07-28' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'ticker', arguments: { n: 20, intervalMs: 0 }, _meta: MODERN_META },
    }),
  });
  if (!response.ok) throw new Error(`stateless: ${response.status} ${await response.text()}`);
  await readSse(response, () => undefined);
}

function diskBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name)).size;
  return total;
}

/** Least-squares slope of y over t (seconds), in units per hour. */
function slopePerHour(points: ReadonlyArray<{ t: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  return (num / den) * 3600;
}

async function soak(name: string, running: Running): Promise<{ series: Series[]; counts: Counts }> {
  const series: Series[] = running.processes.map((p) => ({
    target: name,
    process: p.name,
    samples: [],
  }));
  const counts: Counts = { sessions: 0, calls: 0, resumes: 0, stateless: 0, errors: 0 };
  const started = Date.now();
  const until = started + minutes * 60_000;
  const load = Promise.all(
    Array.from({ length: clients }, (_, i) =>
      client(running.urls[i % running.urls.length]!, until, counts),
    ),
  );
  while (Date.now() < until) {
    for (const [i, p] of running.processes.entries()) {
      const memory = await readMemory(p.child);
      series[i]!.samples.push({
        t: round((Date.now() - started) / 1000, 1),
        rss: memory.rss,
        heapUsed: memory.heapUsed,
        external: memory.external,
        ...(p.dataDir === undefined ? {} : { disk: diskBytes(p.dataDir) }),
      });
    }
    const last = series.map((s) => s.samples.at(-1)!);
    console.error(
      `soak ${name} ${Math.round((Date.now() - started) / 1000)}s: ${counts.sessions} sessions, ${counts.calls} calls, ${counts.errors} errors; ` +
        last
          .map(
            (s, i) =>
              `${series[i]!.process} rss ${mb(s.rss)} heap ${mb(s.heapUsed)}${s.disk === undefined ? '' : ` disk ${mb(s.disk)}`}`,
          )
          .join('; '),
    );
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, Math.min(sampleMs, until - Date.now()))),
    );
  }
  await load;
  return { series, counts };
}

const mb = (bytes: number) => `${round(bytes / 1048576, 1)} MB`;

interface Row {
  target: string;
  process: string;
  metric: 'rss' | 'heapUsed' | 'external' | 'disk';
  /** Mean over the second half of the run, MB. */
  steadyMb: number;
  /** Slope over the second half of the run, MB per hour. */
  slopeMbPerHour: number;
}

function rows(series: readonly Series[]): Row[] {
  return series.flatMap((s) => {
    const steady = s.samples.filter((p) => p.t >= (minutes * 60) / 2);
    return (['rss', 'heapUsed', 'external', 'disk'] as const).flatMap((metric) => {
      const points = steady
        .filter((p) => p[metric] !== undefined)
        .map((p) => ({ t: p.t, y: p[metric]! / 1048576 }));
      if (points.length === 0) return [];
      return [
        {
          target: s.target,
          process: s.process,
          metric,
          steadyMb: round(points.reduce((a, p) => a + p.y, 0) / points.length, 1),
          slopeMbPerHour: round(slopePerHour(points), 2),
        },
      ];
    });
  });
}

/** A line chart of every series (MB over minutes), one colour per process and metric. */
function chart(series: readonly Series[]): string {
  const width = 760;
  const height = 360;
  const pad = { left: 60, right: 220, top: 30, bottom: 40 };
  const lines = series.flatMap((s) =>
    (['rss', 'heapUsed', 'external', 'disk'] as const).flatMap((metric) => {
      const points = s.samples.filter((p) => p[metric] !== undefined);
      return points.length === 0
        ? []
        : [
            {
              label: `${s.target} ${s.process} ${metric}`,
              points: points.map((p) => ({ t: p.t, y: p[metric]! / 1048576 })),
            },
          ];
    }),
  );
  const maxT = Math.max(1, ...lines.flatMap((l) => l.points.map((p) => p.t)));
  const maxY = Math.max(1, ...lines.flatMap((l) => l.points.map((p) => p.y))) * 1.1;
  const x = (t: number) => pad.left + (t / maxT) * (width - pad.left - pad.right);
  const y = (v: number) => height - pad.bottom - (v / maxY) * (height - pad.top - pad.bottom);
  const colours = [
    '#1b6ca8',
    '#d1495b',
    '#66a182',
    '#edae49',
    '#8d6a9f',
    '#2e4057',
    '#00798c',
    '#a05195',
  ];
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${pad.left}" y="18" font-size="13">Soak: memory and disk over ${minutes} min (MB)</text>`,
    `<line x1="${pad.left}" y1="${y(0)}" x2="${width - pad.right}" y2="${y(0)}" stroke="#999"/>`,
    `<line x1="${pad.left}" y1="${y(0)}" x2="${pad.left}" y2="${pad.top}" stroke="#999"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (maxY / 4) * i;
    parts.push(
      `<text x="${pad.left - 6}" y="${y(v) + 4}" text-anchor="end">${Math.round(v)}</text>`,
    );
  }
  for (let i = 0; i <= 4; i++) {
    const t = (maxT / 4) * i;
    parts.push(
      `<text x="${x(t)}" y="${height - pad.bottom + 16}" text-anchor="middle">${round(t / 60, 1)} min</text>`,
    );
  }
  lines.forEach((line, i) => {
    const colour = colours[i % colours.length]!;
    const path = line.points
      .map((p, j) => `${j === 0 ? 'M' : 'L'}${round(x(p.t), 1)},${round(y(p.y), 1)}`)
      .join(' ');
    parts.push(`<path d="${path}" fill="none" stroke="${colour}" stroke-width="1.5"/>`);
    const ly = pad.top + 14 * i;
    parts.push(
      `<rect x="${width - pad.right + 10}" y="${ly - 8}" width="10" height="10" fill="${colour}"/>`,
    );
    parts.push(`<text x="${width - pad.right + 26}" y="${ly + 1}">${line.label}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

const kafka = targets.includes('tidemark-kafka')
  ? await resolveKafka({ log: (line) => console.error(line) })
  : undefined;
const results: Array<{ target: string; counts: Counts; series: Series[] }> = [];
try {
  for (const target of targets) {
    const running =
      target === 'tidemark-embedded' ? await startEmbedded() : await startKafka(kafka!.brokers);
    try {
      const { series, counts } = await soak(target, running);
      results.push({ target, counts, series });
    } finally {
      await running.stop();
    }
  }
} finally {
  await kafka?.stop();
}

const table = rows(results.flatMap((r) => r.series));
writeResult(join(values.out, 'soak.json'), {
  machine: machine(),
  minutes,
  clients,
  expiry: EXPIRY.join(' '),
  results: results.map((r) => ({ target: r.target, counts: r.counts })),
  steadyState: table,
  series: results.flatMap((r) => r.series),
});
writeFileSync(join(values.out, 'soak.svg'), chart(results.flatMap((r) => r.series)));
console.log(`Soak: ${minutes} min, ${clients} clients (${EXPIRY.join(' ')}, resume window 1m)\n`);
for (const r of results)
  console.log(
    `${r.target}: ${r.counts.sessions} sessions, ${r.counts.calls} calls, ${r.counts.resumes} resumes, ${r.counts.stateless} stateless requests, ${r.counts.errors} errors${r.counts.lastError === undefined ? '' : ` (last: ${r.counts.lastError})`}`,
  );
console.log(
  '\n| target | process | metric | steady state (MB) | slope (MB/h) |\n| --- | --- | --- | ---: | ---: |',
);
for (const row of table)
  console.log(
    `| ${row.target} | ${row.process} | ${row.metric} | ${row.steadyMb} | ${row.slopeMbPerHour} |`,
  );
console.log(`\nresults: ${join(values.out, 'soak.json')}, chart: ${join(values.out, 'soak.svg')}`);
