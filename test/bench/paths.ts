// The paths added since the first benchmark — exactly-once effects, tasks/get on a busy partition,
// Events webhook deliveries, OpenTelemetry — measured in `npm run bench` by their own scripts, each
// run as a child process (they start and stop their own servers) whose JSON is kept whole; and
// their targets, for the summary.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Goal } from './goals.ts';
import { ROOT } from './support.ts';

interface Percentiles {
  p50: number;
  p99: number;
}

export interface PathsResult {
  effects?: {
    rows: Array<{
      log: string;
      p50Ms: Record<'plain' | 'keyed' | 'steps', number>;
      p99Ms: Record<'plain' | 'keyed' | 'steps', number>;
      keyedOverheadPct: number;
      perStepMs: number;
    }>;
  };
  taskReads?: { records: number; quiet: Percentiles; busy: Percentiles };
  events?: {
    deliveries: number;
    deliveriesPerWorkerCoreSecond: number;
    emitToReceivedMs: Percentiles;
    rejectedSignatures: number;
  };
  otel?: {
    overhead: { throughputLossPct: number; cpuPerCallIncreasePct: number };
    rows: Array<{ sdk: string; callsPerSec: number; latencyMs: Percentiles }>;
  };
}

type Script = [key: keyof PathsResult, file: string, smoke: string[], full: string[]];

const SCRIPTS: Script[] = [
  ['effects', 'effects.ts', ['--calls', '3', '--steps', '2'], ['--calls', '300', '--steps', '20']],
  ['taskReads', 'task-reads.ts', ['--records', '5000', '--reads', '5'], []],
  ['events', 'events.ts', ['--subscriptions', '2', '--occurrences', '5'], []],
  ['otel', 'otel-overhead.ts', ['--calls', '20', '--clients', '2', '--rounds', '1'], []],
];

/** Runs each script in turn against the broker given; a script that fails fails the benchmark. */
export async function runPaths(options: {
  brokers: readonly string[];
  smoke: boolean;
}): Promise<PathsResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tidemark-paths-'));
  const env = { ...process.env, KAFKA_BROKERS: options.brokers.join(',') };
  const result: PathsResult = {};
  for (const [key, file, smoke, full] of SCRIPTS) {
    const out = join(dir, `${key}.json`);
    const args = [join(ROOT, 'test/bench', file), ...(options.smoke ? smoke : full), '--out', out];
    const { stdout } = await promisify(execFile)(process.execPath, args, {
      cwd: ROOT,
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    console.error(stdout.trimEnd());
    result[key] = JSON.parse(readFileSync(out, 'utf8')) as never;
  }
  return result;
}

/** The targets of #38 for the new paths. */
export function pathGoals(paths: PathsResult | undefined): Goal[] {
  const out: Goal[] = [];
  for (const row of paths?.effects?.rows ?? []) {
    out.push({
      what: `a keyed call over a plain one, p50, ${row.log}`,
      target: '≤ 5% or ≤ 1 ms',
      measured: `${row.keyedOverheadPct}% (${row.p50Ms.plain} → ${row.p50Ms.keyed} ms; p99 ${row.p99Ms.plain} → ${row.p99Ms.keyed} ms)`,
      met: row.keyedOverheadPct <= 5 || row.p50Ms.keyed - row.p50Ms.plain <= 1,
    });
    out.push({
      what: `one durable step, ${row.log}`,
      target: '≤ 1 ms',
      measured: `${row.perStepMs} ms`,
      met: row.perStepMs <= 1,
    });
  }
  const reads = paths?.taskReads;
  if (reads !== undefined)
    out.push({
      what: `tasks/get with ${reads.records.toLocaleString('en-US')} other records on the task's partition, p50`,
      target: '≤ 5 ms',
      measured: `${reads.busy.p50} ms (p99 ${reads.busy.p99} ms; quiet partition ${reads.quiet.p50} / ${reads.quiet.p99} ms)`,
      met: reads.busy.p50 <= 5,
    });
  const events = paths?.events;
  if (events !== undefined)
    out.push({
      what: `webhook deliveries per worker core-second (${events.deliveries} deliveries)`,
      target: 'measured (no speed target); every signature valid',
      measured: `${events.deliveriesPerWorkerCoreSecond}/s, emit → received p50 ${events.emitToReceivedMs.p50} ms, p99 ${events.emitToReceivedMs.p99} ms`,
      met: events.rejectedSignatures === 0,
    });
  const otel = paths?.otel;
  if (otel !== undefined)
    out.push({
      what: 'throughput lost to the OpenTelemetry SDK at default sampling (tidemark dev)',
      target: '≤ 15%',
      measured: `${otel.overhead.throughputLossPct}% (${otel.overhead.cpuPerCallIncreasePct}% more server CPU per call)`,
      met: otel.overhead.throughputLossPct <= 15,
    });
  return out;
}
