// What tracing costs: the same load on `tidemark dev` without an OpenTelemetry SDK (the API is a
// no-op), with the SDK on (default sampling; spans for a call's milestones, each event carrying
// its trace context), and with a span for every event too (--trace-events), exporting every span
// and metric over OTLP/HTTP to a sink in this process, in interleaved rounds. Prints a table
// (each setting's median round) and writes JSON.
//
//   npm run bench:otel                       # sizes for a real measurement
//   npm run bench:otel -- --calls 20         # a smoke run
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { RawMcpClient } from '@tidemark/fixtures/sse';
import { machine, percentile, round, startDev, writeResult } from './support.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '2000' },
    clients: { type: 'string', default: '8' },
    events: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
    out: { type: 'string', default: 'test/bench/results/otel-overhead.json' },
  },
});
const calls = Number(values.calls);
const clients = Number(values.clients);
const events = Number(values.events);
const rounds = Number(values.rounds);

// The OTLP sink: accepts and counts, like a collector that keeps up.
let exportedBytes = 0;
const sink = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (exportedBytes += chunk.length));
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

interface Row {
  sdk: string;
  calls: number;
  callsPerSec: number;
  eventsPerSec: number;
  latencyMs: { p50: number; p99: number };
  serverCpuMs: number;
}

type Setting = 'off' | 'on' | 'on, every event';

async function run(sdk: Setting): Promise<Row> {
  const env: NodeJS.ProcessEnv =
    sdk === 'off'
      ? { OTEL_SDK_DISABLED: 'true' }
      : {
          OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_METRICS_EXPORTER: 'otlp',
          OTEL_METRIC_EXPORT_INTERVAL: '1000',
          ...(sdk === 'on, every event' ? { TIDEMARK_TRACE_EVENTS: 'true' } : {}),
        };
  const dev = await startDev({ ...env, TIDEMARK_LOG_LEVEL: 'warn' });
  try {
    const sessions = await Promise.all(
      Array.from({ length: clients }, async () => {
        const client = new RawMcpClient(dev.url);
        await client.initialize();
        return client;
      }),
    );
    // Warm-up, then the measured calls.
    await Promise.all(sessions.map((client, i) => client.callCount(1_000_000 + i, events, 0)));
    const cpuBefore = await cpuMs(dev.process.child.pid!);
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      sessions.map(async (client) => {
        while (next < calls) {
          const id = next++;
          const t0 = performance.now();
          await client.callCount(id + 1, events, 0);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = (await cpuMs(dev.process.child.pid!)) - cpuBefore;
    latencies.sort((a, b) => a - b);
    return {
      sdk,
      calls,
      callsPerSec: round(calls / seconds, 0),
      eventsPerSec: round((calls * (events + 1)) / seconds, 0),
      latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)) },
      serverCpuMs: round(cpu, 0),
    };
  } finally {
    await dev.process.stop();
  }
}

/** User + system CPU time of a process, from /proc (Linux). */
async function cpuMs(pid: number): Promise<number> {
  const { readFileSync } = await import('node:fs');
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ = 100
}

// Rounds, the settings interleaved in each (a slow minute of a shared machine falls on all of
// them alike): a setting's row is its median round; the losses pair the rounds.
const SETTINGS: readonly Setting[] = ['off', 'on', 'on, every event'];
const runs = new Map<Setting, Row[]>(SETTINGS.map((setting) => [setting, []]));
for (let r = 0; r < rounds; r++)
  for (const setting of SETTINGS) runs.get(setting)!.push(await run(setting));
sink.close();
const middle = (of: readonly Row[]) =>
  [...of].sort((a, b) => a.callsPerSec - b.callsPerSec)[Math.floor((of.length - 1) / 2)]!;
const rows = SETTINGS.map((setting) => middle(runs.get(setting)!));
const [off, on] = [runs.get('off')!, runs.get('on')!];
const everyEvent = runs.get('on, every event')!;
/** Per round, the percentage by which `a` falls short of `b`; median first, then the range. */
const losses = (a: readonly Row[], b: readonly Row[], pick: (row: Row) => number) =>
  a.map((row, i) => round((1 - pick(row) / pick(b[i]!)) * 100, 1)).sort((x, y) => x - y);
const lossOn = losses(on, off, (r) => r.callsPerSec);
const cpuOn = on.map((row, i) => round((row.serverCpuMs / off[i]!.serverCpuMs - 1) * 100, 1));
const lossEvery = losses(everyEvent, off, (r) => r.callsPerSec);
const mid = (xs: readonly number[]) => xs[Math.floor((xs.length - 1) / 2)]!;
console.log(
  `OpenTelemetry overhead — ${clients} clients × count(${events}), ${calls} calls, tidemark dev (server and load share ${String(machine()['cores'])} cores)`,
);
console.table(
  rows.map((r) => ({
    sdk: r.sdk,
    'calls/s': r.callsPerSec,
    'events/s': r.eventsPerSec,
    'p50 ms': r.latencyMs.p50,
    'p99 ms': r.latencyMs.p99,
    'server CPU ms/call': round(r.serverCpuMs / r.calls, 3),
  })),
);
const overhead = {
  throughputLossPct: mid(lossOn),
  throughputLossRangePct: [lossOn[0]!, lossOn.at(-1)!],
  cpuPerCallIncreasePct: mid([...cpuOn].sort((x, y) => x - y)),
  everyEventThroughputLossPct: mid(lossEvery),
  exportedKiB: round(exportedBytes / 1024, 0),
  rounds,
};
console.log(
  `SDK on: ${overhead.throughputLossPct}% fewer calls/s (median of ${rounds} interleaved rounds, ${lossOn[0]}–${lossOn.at(-1)}%), ${overhead.cpuPerCallIncreasePct}% more server CPU per call; with a span per event: ${overhead.everyEventThroughputLossPct}% fewer calls/s; ${overhead.exportedKiB} KiB exported`,
);
writeResult(values.out, {
  machine: machine(),
  clients,
  events,
  rows,
  runs: Object.fromEntries(runs),
  overhead,
});
