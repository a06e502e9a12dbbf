// `npm run soak`: Tidemark under a steady churn for a bounded time, sampling the RSS, heap and disk
// of every server process, to show that memory and disk follow what is live, not what was seen.
//
//   npm run soak                       # 30 minutes: 15 embedded, 15 on Kafka
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
import { MODERN_META, readSse } from '@tidemark/fixtures/sse';
import { chart, rows, rssParts, soakGoals, type Series } from './soak-report.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '15' },
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
        heapTotal: memory.heapTotal,
        external: memory.external,
        rssFile: memory.rssFile,
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

const table = rows(
  results.flatMap((r) => r.series),
  (minutes * 60) / 2,
);
const targetsMet = soakGoals(table);
writeResult(join(values.out, 'soak.json'), {
  machine: machine(),
  minutes,
  clients,
  expiry: EXPIRY.join(' '),
  results: results.map((r) => ({ target: r.target, counts: r.counts })),
  steadyState: table,
  goals: targetsMet,
  series: results.flatMap((r) => r.series),
});
writeFileSync(
  join(values.out, 'soak.svg'),
  chart(
    results.flatMap((r) => r.series),
    minutes,
  ),
);
console.log(`Soak: ${minutes} min, ${clients} clients (${EXPIRY.join(' ')}, resume window 1m)\n`);
for (const r of results)
  console.log(
    `${r.target}: ${r.counts.sessions} sessions, ${r.counts.calls} calls, ${r.counts.resumes} resumes, ${r.counts.stateless} stateless requests, ${r.counts.errors} errors${r.counts.lastError === undefined ? '' : ` (last: ${r.counts.lastError})`}`,
  );
console.log(
  '\n| target | process | metric | steady state (MB) | least–most (MB) | slope (MB/h) |\n| --- | --- | --- | ---: | ---: | ---: |',
);
for (const row of table)
  console.log(
    `| ${row.target} | ${row.process} | ${row.metric} | ${row.steadyMb} | ${row.minMb}–${row.maxMb} | ${row.slopeMbPerHour} ± ${row.slopeErrorMbPerHour} |`,
  );
console.log('\nWhat the RSS is made of (means over the second half):');
for (const line of rssParts(table)) console.log(`- ${line}`);
console.log('\nTargets:');
for (const goal of targetsMet)
  console.log(
    `- ${goal.met ? 'met   ' : 'MISSED'} ${goal.what}: ${goal.measured} (target ${goal.target})`,
  );
console.log(`\nresults: ${join(values.out, 'soak.json')}, chart: ${join(values.out, 'soak.svg')}`);
