#!/usr/bin/env node
// `npm run capacity -- --sessions 1000000 --calls-per-hour 6 --events-per-call 20 --call-seconds 60`:
// what a deployment needs — gateways, workers, partitions, broker throughput, memory — computed from
// the figures the benchmarks measured (docs/benchmarks/*.json, rewritten by each `npm run bench*`),
// never from constants typed here. docs/capacity.md explains every line and where the model held.
// `--check` prints the model against the runs it can be checked on. `--json` prints the plan as JSON.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const measured = (name) =>
  JSON.parse(readFileSync(join(root, 'docs', 'benchmarks', `${name}.json`), 'utf8'));

/** Kafka's default `group.consumer.max.size`: a broker setting the plan is checked against. */
const GROUP_MAX_SIZE = 200;

const FLAGS = {
  sessions: { type: 'string', default: '1000000' },
  listening: { type: 'string', default: '0.5' },
  'calls-per-hour': { type: 'string', default: '6' },
  'events-per-call': { type: 'string', default: '20' },
  'call-seconds': { type: 'string', default: '60' },
  replication: { type: 'string', default: '3' },
  utilization: { type: 'string', default: '0.6' },
  'cores-per-pod': { type: 'string', default: '1' },
  // The worker's --max-concurrent-calls default: a setting, not a measurement.
  'slots-per-worker': { type: 'string', default: '64' },
  check: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
};

/** The figures a plan rests on, each from a benchmark's output. */
export function figures() {
  const bench = measured('bench');
  const fanout = measured('fanout');
  const soak = measured('soak');
  // Busy partitions: the live benchmark at 100 clients (4 partitions, one gateway).
  const busy = bench.live.find((r) => r.target === 'tidemark-kafka-1' && r.clients === 100);
  const session = fanout.rows.filter((r) => r.lane === 'session');
  const quiet = fitGatewayCpu(session, fanout);
  const memory = (process) =>
    bench.memory.find(
      (r) => r.target === 'tidemark-kafka-1' && r.process === process && r.sessions === 10_000,
    );
  const steady = (process) =>
    soak.steadyState.find(
      (r) => r.target === 'tidemark-kafka' && r.process === process && r.metric === 'rss',
    ).steadyMb;
  // The largest storm: 10,000 sessions resuming at once on two gateways.
  const storm = bench.resume.storms.find((r) => r.target === 'tidemark-kafka-2');
  return {
    busyEventsPerPartitionPerSecond: busy.eventsPerSec / 4,
    busyGatewayMsPerEvent: (busy.gatewayCores * 1000) / busy.eventsPerSec,
    busyWorkerMsPerEvent: ((busy.serverCores - busy.gatewayCores) * 1000) / busy.eventsPerSec,
    quietEventsPerPartitionPerSecond: quiet.eventsPerPartitionPerSecond,
    quietGatewayMsPerEvent: quiet.msPerEvent,
    gatewayIdleCores: quiet.idleCores,
    recordBytes: session[0].fetchedBytes / session[0].fetchedRecords,
    recordsFetchedPerEvent: Math.max(...fanout.rows.map((r) => r.recordsPerEvent)),
    gateway: {
      idleSessionKb: memory('gateway').idleSessionRssBytes / 1024,
      liveStreamKb: memory('gateway').liveStreamRssBytes / 1024,
      baseMb: steady('gateway'),
    },
    worker: {
      idleSessionKb: memory('worker').idleSessionRssBytes / 1024,
      baseMb: steady('worker'),
    },
    resumesPerGatewaySecond: storm.sessions / (storm.allResumedMs / 1000) / 2,
  };
}

/**
 * Gateway CPU in the fan-out runs (quiet partitions: one record or two per fetch), fitted as
 * `idle × gateways × seconds + msPerEvent × events` by least squares over its gateway counts.
 */
export function fitGatewayCpu(rows, run) {
  const points = rows.map((r) => ({
    idle: r.gateways * r.seconds * 1000, // ms of wall time, summed over the gateways
    events: r.deliveredEvents,
    cpuMs: r.gatewayCpuMsPerEvent * r.deliveredEvents,
  }));
  // Two unknowns, normal equations.
  const sum = (f) => points.reduce((s, p) => s + f(p), 0);
  const aa = sum((p) => p.idle * p.idle);
  const ab = sum((p) => p.idle * p.events);
  const bb = sum((p) => p.events * p.events);
  const ay = sum((p) => p.idle * p.cpuMs);
  const by = sum((p) => p.events * p.cpuMs);
  const det = aa * bb - ab * ab;
  const idleCores = (ay * bb - by * ab) / det;
  const msPerEvent = (aa * by - ab * ay) / det;
  const first = rows[0];
  return {
    idleCores,
    msPerEvent,
    eventsPerPartitionPerSecond: first.deliveredEvents / first.seconds / run.partitions,
    predict: (r) =>
      (idleCores * r.gateways * r.seconds * 1000 + msPerEvent * r.deliveredEvents) /
      r.deliveredEvents,
  };
}

/** Per-event CPU between the quiet and the busy regimes, by events per partition per second. */
function msPerEvent(f, perPartition, quiet, busy) {
  if (perPartition <= f.quietEventsPerPartitionPerSecond) return quiet;
  if (perPartition >= f.busyEventsPerPartitionPerSecond) return busy;
  const at =
    Math.log(perPartition / f.quietEventsPerPartitionPerSecond) /
    Math.log(f.busyEventsPerPartitionPerSecond / f.quietEventsPerPartitionPerSecond);
  return quiet * (busy / quiet) ** at;
}

/** The plan for a load. */
export function plan(load, f = figures()) {
  const callsPerSecond = (load.sessions * load.callsPerHour) / 3600;
  const eventsPerSecond = callsPerSecond * (load.eventsPerCall + 1); // + the result
  const concurrentCalls = callsPerSecond * load.callSeconds; // Little's law
  const liveStreams = concurrentCalls + load.sessions * load.listening;
  const usable = load.coresPerPod * load.utilization;
  // Workers: enough slots for the calls running at once, and enough cores for their events.
  const workersForSlots = Math.ceil(concurrentCalls / load.slotsPerWorker);
  // Partitions: at least one per worker and per gateway; per-partition load decides the regime.
  let partitions = Math.max(12, workersForSlots);
  let gateways = 1;
  let workers = workersForSlots;
  for (let round = 0; round < 8; round++) {
    const perPartition = eventsPerSecond / partitions;
    const gwMs = msPerEvent(f, perPartition, f.quietGatewayMsPerEvent, f.busyGatewayMsPerEvent);
    const gatewayCores = (eventsPerSecond * gwMs) / 1000 + gateways * f.gatewayIdleCores;
    gateways = Math.max(2, Math.ceil(gatewayCores / usable));
    const workerCores =
      (eventsPerSecond * f.busyWorkerMsPerEvent * (gwMs / f.busyGatewayMsPerEvent)) / 1000;
    workers = Math.max(2, workersForSlots, Math.ceil(workerCores / usable));
    partitions = Math.max(partitions, workers, gateways);
  }
  const sessionsPerGateway = load.sessions / gateways;
  const gatewayMemoryMb =
    f.gateway.baseMb +
    (sessionsPerGateway * f.gateway.idleSessionKb +
      (liveStreams / gateways) * f.gateway.liveStreamKb) /
      1024;
  const workerMemoryMb =
    f.worker.baseMb + ((load.sessions / workers) * f.worker.idleSessionKb) / 1024;
  const produceMBps = (eventsPerSecond * f.recordBytes) / 1e6;
  return {
    load: { callsPerSecond, eventsPerSecond, concurrentCalls, liveStreams },
    gateways,
    workers,
    partitions,
    memory: { gatewayMb: gatewayMemoryMb, workerMb: workerMemoryMb },
    broker: {
      produceMBps,
      replicationMBps: produceMBps * (load.replication - 1),
      gatewayFetchMBps: produceMBps * f.recordsFetchedPerEvent,
    },
    resumeStormSeconds: load.sessions / (f.resumesPerGatewaySecond * gateways),
  };
}

function number(values, name, { min = 0, integer = false } = {}) {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
    process.stderr.write(
      `capacity: --${name}: expected ${integer ? 'an integer' : 'a number'} ≥ ${min}, got "${values[name]}"\n`,
    );
    process.exit(2);
  }
  return n;
}

function main() {
  let values;
  try {
    ({ values } = parseArgs({ options: FLAGS }));
  } catch (error) {
    process.stderr.write(`capacity: ${error.message}\n`);
    process.exit(2);
  }
  const f = figures();
  if (values.check) return check(f);
  const load = {
    sessions: number(values, 'sessions', { min: 1, integer: true }),
    listening: Math.min(1, number(values, 'listening')),
    callsPerHour: number(values, 'calls-per-hour'),
    eventsPerCall: number(values, 'events-per-call', { integer: true }),
    callSeconds: number(values, 'call-seconds'),
    replication: number(values, 'replication', { min: 1, integer: true }),
    utilization: Math.min(1, number(values, 'utilization', { min: 0.05 })),
    coresPerPod: number(values, 'cores-per-pod', { min: 0.1 }),
    slotsPerWorker: number(values, 'slots-per-worker', { min: 1, integer: true }),
  };
  const p = plan(load, f);
  if (values.json)
    return void process.stdout.write(`${JSON.stringify({ load, figures: f, plan: p }, null, 2)}\n`);
  const n = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d });
  process.stdout.write(
    [
      `load: ${n(p.load.callsPerSecond, 1)} calls/s, ${n(p.load.eventsPerSecond)} events/s, ` +
        `${n(p.load.concurrentCalls)} calls running, ${n(p.load.liveStreams)} open streams`,
      `gateways: ${p.gateways} × ${load.coresPerPod} core, ${n(p.memory.gatewayMb)} MB RSS each`,
      `workers: ${p.workers} × ${load.coresPerPod} core (${load.slotsPerWorker} call slots each), ${n(p.memory.workerMb)} MB RSS each`,
      `partitions of requests and events: ${p.partitions} at least`,
      `brokers: ${n(p.broker.produceMBps, 1)} MB/s produced to events, ${n(p.broker.replicationMBps, 1)} MB/s replicated, ` +
        `${n(p.broker.gatewayFetchMBps, 1)} MB/s fetched by gateways`,
      `a resume storm of every session: ${n(p.resumeStormSeconds)} s`,
      ...limits(p).map((line) => `limit: ${line}`),
    ].join('\n') + '\n',
  );
}

/** What the plan runs into (docs/capacity.md, "Limits to plan around"). */
function limits(p) {
  const said = [];
  if (p.workers > GROUP_MAX_SIZE)
    said.push(
      `${p.workers} workers in one group: past the brokers' group.consumer.max.size (${GROUP_MAX_SIZE} by default) — raise it, or give each worker more call slots (--slots-per-worker, the workers' --max-concurrent-calls) if its tools mostly wait`,
    );
  if (p.gateways > p.partitions)
    said.push('more gateways than partitions: the extra ones hold no share of their own');
  return said;
}

/** The model against the runs it can be checked on: the fan-out runs it was fitted on, gateway by gateway. */
function check(f) {
  const fanout = measured('fanout');
  const fit = fitGatewayCpu(
    fanout.rows.filter((r) => r.lane === 'session'),
    fanout,
  );
  process.stdout.write(
    `gateway idle cost ${(f.gatewayIdleCores * 100).toFixed(1)}% of a core; ` +
      `${f.quietGatewayMsPerEvent.toFixed(3)} ms per event on quiet partitions, ` +
      `${f.busyGatewayMsPerEvent.toFixed(4)} ms on busy ones\n`,
  );
  for (const row of fanout.rows) {
    const predicted = fit.predict(row);
    const error = ((predicted - row.gatewayCpuMsPerEvent) / row.gatewayCpuMsPerEvent) * 100;
    process.stdout.write(
      `${row.lane} lane, ${row.gateways} gateway(s): gateway CPU per event measured ${row.gatewayCpuMsPerEvent} ms, ` +
        `model ${predicted.toFixed(3)} ms (${error >= 0 ? '+' : ''}${error.toFixed(0)}%)\n`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
