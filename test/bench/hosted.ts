// `npm run bench:hosted`: what hosting an MCP server costs (issue #60). Sequential calls of three
// kinds, interleaved:
//   direct   the official client over stdio straight to server-everything's `echo` (no Tidemark)
//   native   a Tidemark tool that does nothing (`steps` with n=0), through a gateway and a worker
//   hosted   server-everything's `echo`, hosted by the worker (`--mcp-server`), through the same
// on `tidemark dev` and on Kafka. Prints p50/p99 of each, what the whole path adds to the direct
// call (hosted − direct) and what hosting adds to a native tool (hosted − native). Then, on Kafka,
// concurrent hosted calls for a while: calls/s, and calls/s per core the worker used (its
// server-everything processes counted separately and together). Writes JSON.
//
//   npm run bench:hosted                    # 300 calls of each kind, 10 s of load
//   npm run bench:hosted -- --calls 20 --load-seconds 2   # a smoke run
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import pidusage from 'pidusage';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { statelessRequest } from '@tidemark/protocol';
import {
  benchTopics,
  machine,
  percentile,
  ROOT,
  round,
  startDev,
  startWorkerAndGateway,
  writeResult,
} from './support.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '300' },
    'load-seconds': { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '16' },
    out: { type: 'string', default: 'test/bench/results/hosted.json' },
  },
});
const calls = Number(values.calls);
const loadSeconds = Number(values['load-seconds']);
const concurrency = Number(values.concurrency);
if (![calls, loadSeconds, concurrency].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error(
    'bench:hosted: --calls, --load-seconds and --concurrency must be positive integers',
  );
  process.exit(2);
}
const TOOLS = join(ROOT, 'test/bench/bench-tools.ts');
const EVERYTHING = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
);
const HOSTED = ['--mcp-server', `everything=${process.execPath} ${EVERYTHING} stdio`];
const KINDS = ['direct', 'native', 'hosted'] as const;
type Kind = (typeof KINDS)[number];

/** One stateless `tools/call` through Tidemark, answered as JSON; its latency in ms. */
async function viaTidemark(url: string, kind: 'native' | 'hosted'): Promise<number> {
  const [name, args] = kind === 'native' ? ['steps', { n: 0 }] : ['echo', { message: 'hi' }];
  const { headers, body } = statelessRequest(
    'tools/call',
    { name, arguments: args },
    { clientInfo: { name: 'bench-hosted', version: '1' }, capabilities: {}, name },
  );
  const started = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, Accept: 'application/json' },
    body,
  });
  const answer = (await response.json()) as { result?: unknown; error?: unknown };
  if (answer.result === undefined) throw new Error(`${kind}: ${JSON.stringify(answer)}`);
  return performance.now() - started;
}

/** The same `echo`, straight to the server over stdio with the official client. */
async function directClient(): Promise<{ call(): Promise<number>; close(): Promise<void> }> {
  const client = new Client({ name: 'bench-hosted', version: '1' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'] }),
  );
  return {
    call: async () => {
      const started = performance.now();
      await client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      return performance.now() - started;
    },
    close: () => client.close(),
  };
}

interface Row {
  log: string;
  calls: number;
  p50Ms: Record<Kind, number>;
  p99Ms: Record<Kind, number>;
  /** hosted − direct at p50: what the whole path (HTTP, gateway, log, worker) adds. */
  pathOverheadP50Ms: number;
  /** hosted − native at p50: what hosting adds to a tool of the worker's own. */
  hostingOverheadP50Ms: number;
}

async function measure(log: string, url: string): Promise<Row> {
  const direct = await directClient();
  try {
    const once = (kind: Kind) => (kind === 'direct' ? direct.call() : viaTidemark(url, kind));
    for (let i = 0; i < Math.min(20, calls); i++) for (const kind of KINDS) await once(kind);
    const times: Record<Kind, number[]> = { direct: [], native: [], hosted: [] };
    for (let i = 0; i < calls; i++) for (const kind of KINDS) times[kind].push(await once(kind));
    const p = (kind: Kind, q: number) =>
      round(
        percentile(
          [...times[kind]].sort((a, b) => a - b),
          q,
        ),
      );
    const p50Ms = { direct: p('direct', 50), native: p('native', 50), hosted: p('hosted', 50) };
    const p99Ms = { direct: p('direct', 99), native: p('native', 99), hosted: p('hosted', 99) };
    return {
      log,
      calls,
      p50Ms,
      p99Ms,
      pathOverheadP50Ms: round(p50Ms.hosted - p50Ms.direct),
      hostingOverheadP50Ms: round(p50Ms.hosted - p50Ms.native),
    };
  } finally {
    await direct.close();
  }
}

/** CPU seconds `pids` have used so far (user and system). */
async function cpuSeconds(pids: number[]): Promise<number> {
  if (pids.length === 0) return 0;
  const stats = await pidusage(pids);
  return Object.values(stats).reduce((sum, s) => sum + s.ctime, 0) / 1000;
}

interface Load {
  concurrency: number;
  seconds: number;
  callsPerSecond: number;
  workerCores: number;
  serverCores: number;
  callsPerWorkerCore: number;
  callsPerCoreWithServers: number;
}

/** `concurrency` loops of hosted calls for `loadSeconds`; the worker's and its children's CPU. */
async function load(url: string, workerPid: number): Promise<Load> {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(workerPid)], {
    encoding: 'utf8',
  })
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0);
  const before = { worker: await cpuSeconds([workerPid]), servers: await cpuSeconds(children) };
  const started = performance.now();
  const deadline = started + loadSeconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await viaTidemark(url, 'hosted');
        done++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const workerCores = ((await cpuSeconds([workerPid])) - before.worker) / seconds;
  const serverCores = ((await cpuSeconds(children)) - before.servers) / seconds;
  const callsPerSecond = done / seconds;
  return {
    concurrency,
    seconds: round(seconds, 1),
    callsPerSecond: Math.round(callsPerSecond),
    workerCores: round(workerCores),
    serverCores: round(serverCores),
    callsPerWorkerCore: Math.round(callsPerSecond / workerCores),
    callsPerCoreWithServers: Math.round(callsPerSecond / (workerCores + serverCores)),
  };
}

const rows: Row[] = [];
// Quiet servers (no line per call on stderr); the Kafka replicas share one event-id secret.
const env = {
  ...process.env,
  TIDEMARK_LOG_LEVEL: 'warn',
  TIDEMARK_SECRET: randomBytes(32).toString('hex'),
};
const dev = await startDev(env, ['--tools', TOOLS, ...HOSTED]);
try {
  rows.push(await measure('embedded (tidemark dev)', dev.url));
} finally {
  await dev.process.stop();
}
let loaded: Load;
const kafka = await resolveKafka({ log: (line) => console.error(line) });
try {
  const flags = await benchTopics(kafka.brokers, 'hosted');
  const stack = await startWorkerAndGateway(flags, env, { worker: ['--tools', TOOLS, ...HOSTED] });
  try {
    rows.push(await measure('kafka (worker + gateway)', stack.url));
    const worker = stack.processes.find((p) => p.name === 'worker')!.child.child.pid!;
    loaded = await load(stack.url, worker);
  } finally {
    for (const { child } of stack.processes.reverse()) await child.stop();
  }
} finally {
  await kafka.stop();
}

console.log(
  [
    `Hosting an MCP server (server-everything's echo): ${calls} sequential calls of each kind`,
    '',
    '| log | direct p50 / p99 | native tool p50 / p99 | hosted p50 / p99 | hosted − direct (p50) | hosted − native (p50) |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.log} | ${r.p50Ms.direct} / ${r.p99Ms.direct} ms | ${r.p50Ms.native} / ${r.p99Ms.native} ms | ${r.p50Ms.hosted} / ${r.p99Ms.hosted} ms | ${r.pathOverheadP50Ms} ms | ${r.hostingOverheadP50Ms} ms |`,
    ),
    '',
    `Load on Kafka: ${loaded.concurrency} concurrent callers for ${loaded.seconds} s — ` +
      `${loaded.callsPerSecond} hosted calls/s; the worker used ${loaded.workerCores} cores ` +
      `(${loaded.callsPerWorkerCore} calls/s per worker core), its server processes ` +
      `${loaded.serverCores} (${loaded.callsPerCoreWithServers} calls/s per core, both counted)`,
  ].join('\n'),
);
writeResult(values.out, { machine: machine(), rows, load: loaded });
