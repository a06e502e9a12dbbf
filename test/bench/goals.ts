// The performance targets, checked against one benchmark run: each with what was measured and
// whether it was met. Printed with the summary (SUMMARY.md) — numbers, never a timed test.
import type { LiveRow } from './live.ts';
import type { MemoryRow } from './memory.ts';
import { pathGoals, type PathsResult } from './paths.ts';
import type { ResumeRow, StormRow } from './resume.ts';
import { median } from './support.ts';

export interface GoalInput {
  live?: LiveRow[];
  resume?: { rows: ResumeRow[]; storms: StormRow[] };
  memory?: MemoryRow[];
  paths?: PathsResult;
}

export interface Goal {
  readonly what: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean | undefined;
}

/** Ours over the SDK's events per server core, round by round (the rounds ran interleaved). */
function perCoreRatios(ours: LiveRow | undefined, sdk: LiveRow | undefined): number[] {
  if (ours === undefined || sdk === undefined) return [];
  const a = ours.runs ?? [ours];
  const b = sdk.runs ?? [sdk];
  return a.flatMap((run, i) => {
    const base = b[i];
    if (base === undefined || run.serverCores <= 0 || base.serverCores <= 0) return [];
    return [run.eventsPerSec / run.serverCores / (base.eventsPerSec / base.serverCores)];
  });
}

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

/** Every target the run has the numbers for. */
export function goals(result: GoalInput): Goal[] {
  const out: Goal[] = [];
  const live = result.live ?? [];
  const row = (target: string, clients: number) =>
    live.find((r) => r.target === target && r.clients === clients);
  const clientCounts = [...new Set(live.map((r) => r.clients))].sort((a, b) => a - b);
  for (const target of ['tidemark-embedded', 'tidemark-kafka-1'])
    for (const clients of clientCounts) {
      const ratios = perCoreRatios(row(target, clients), row('sdk-memory', clients));
      if (ratios.length === 0) continue;
      const least = Math.min(...ratios);
      out.push({
        what: `live events/s per server core vs the SDK, ${target}, ${clients} clients`,
        target: '≥ 1.5× in every round',
        measured: `${median(ratios).toFixed(2)}× median, ${least.toFixed(2)}–${Math.max(...ratios).toFixed(2)}× over ${ratios.length} interleaved rounds`,
        met: least >= 1.5,
      });
    }
  for (const clients of clientCounts) {
    const r = row('tidemark-kafka-1', clients);
    if (r?.gatewayCores !== undefined && r.gatewayCores > 0)
      out.push({
        what: `Kafka events/s per gateway core, ${clients} clients`,
        target: '≥ 50,000',
        measured: fmt(r.eventsPerSec / r.gatewayCores),
        met: r.eventsPerSec / r.gatewayCores >= 50_000,
      });
    const floor = row('kafka-floor', clients);
    if (r !== undefined && floor !== undefined && floor.eventsPerSec > 0)
      out.push({
        what: `Kafka events/s as a share of the floor (raw produce → fetch), ${clients} clients`,
        target: '≥ 40%',
        measured: `${Math.round((100 * r.eventsPerSec) / floor.eventsPerSec)}% (${fmt(r.eventsPerSec)} of ${fmt(floor.eventsPerSec)})`,
        met: r.eventsPerSec / floor.eventsPerSec >= 0.4,
      });
    if (r !== undefined && floor !== undefined)
      out.push({
        what: `Kafka added latency over the floor, p50, ${clients} clients`,
        target: '≤ 1 ms',
        measured: `${(r.latencyMs.p50 - floor.latencyMs.p50).toFixed(2)} ms`,
        met: r.latencyMs.p50 - floor.latencyMs.p50 <= 1,
      });
  }
  const resume = result.resume?.rows ?? [];
  const resumeRow = (target: string, replay: number) =>
    resume.find((r) => r.target === target && r.replay === replay);
  const longest = Math.max(0, ...resume.map((r) => r.replay));
  const sdkLong = resumeRow('sdk-memory', longest);
  for (const target of ['tidemark-embedded', 'tidemark-kafka-1']) {
    const r = resumeRow(target, longest);
    if (r === undefined) continue;
    if (sdkLong !== undefined)
      out.push({
        what: `replay of ${fmt(longest)} events to its end, p50, ${target}`,
        target: `≤ the SDK's (${fmt(sdkLong.seamMs.p50)} ms)`,
        measured: `${fmt(r.seamMs.p50)} ms`,
        met: r.seamMs.p50 <= sdkLong.seamMs.p50,
      });
    out.push({
      what: `replay of ${fmt(longest)} events: first event, p50, ${target}`,
      target: '≤ 10 ms',
      measured: `${r.firstEventMs.p50} ms`,
      met: r.firstEventMs.p50 <= 10,
    });
  }
  const shortest = Math.min(...resume.map((r) => r.replay));
  for (const [target, limit] of [
    ['tidemark-embedded', 2],
    ['tidemark-kafka-1', 10],
  ] as const) {
    const r = resumeRow(target, shortest);
    if (r !== undefined)
      out.push({
        what: `resume → first replayed event, p99, ${target}`,
        target: `≤ ${limit} ms`,
        measured: `${r.firstEventMs.p99} ms`,
        met: r.firstEventMs.p99 <= limit,
      });
  }
  const storm = result.resume?.storms.find((s) => s.target === 'tidemark-kafka-2');
  if (storm !== undefined)
    out.push({
      what: `${fmt(storm.sessions)} simultaneous resumes, two gateways, all served`,
      target: storm.sessions >= 10_000 ? '≤ 5 s' : '≤ 5 s (at 10,000 sessions)',
      measured: `${fmt(storm.allResumedMs)} ms`,
      met: storm.sessions >= 10_000 ? storm.allResumedMs <= 5_000 : undefined,
    });
  const gateway = (result.memory ?? [])
    .filter((m) => m.target === 'tidemark-kafka-1' && m.process === 'gateway')
    .sort((a, b) => b.sessions - a.sessions)[0];
  if (gateway !== undefined)
    out.push({
      what: `gateway heap per live stream (${fmt(gateway.sessions)} streams)`,
      target: '≤ 8 KB',
      measured: `${(gateway.liveStreamHeapBytes / 1024).toFixed(1)} KB`,
      met: gateway.liveStreamHeapBytes <= 8 * 1024,
    });
  return [...out, ...pathGoals(result.paths)];
}

/** The targets as a markdown table. */
export function renderGoals(result: GoalInput): string {
  const rows = goals(result).map(
    (g) =>
      `| ${g.what} | ${g.target} | ${g.measured} | ${g.met === undefined ? '—' : g.met ? 'met' : '**missed**'} |`,
  );
  return [
    '**Targets** (from this run; a miss is a finding)',
    '',
    '| target | goal | measured | |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}
