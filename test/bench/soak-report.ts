// What `npm run soak` makes of its samples: the steady state and slope of every series, the
// targets met or missed (with the spread), what the RSS is made of, and the chart.
import { round } from './support.ts';

export interface Sample {
  /** Seconds since the load started. */
  t: number;
  rss: number;
  heapUsed: number;
  /** The pages V8 held before the reading's GC: the heap's share of the RSS. */
  heapTotal?: number;
  /** Memory of Buffers and other objects outside the JS heap (after the same GC). */
  external: number;
  /** RSS backed by files: the node binary's code, shared by every process mapping it. */
  rssFile?: number;
  /** Bytes of the process's data on disk (the embedded log's files), when it has any. */
  disk?: number;
}

export interface Series {
  target: string;
  process: string;
  samples: Sample[];
}

const METRICS = ['rss', 'heapUsed', 'heapTotal', 'external', 'rssFile', 'disk'] as const;
type Metric = (typeof METRICS)[number];

export interface Row {
  target: string;
  process: string;
  metric: Metric;
  /** Mean over the second half of the run, MB, and the least and most sampled there. */
  steadyMb: number;
  minMb: number;
  maxMb: number;
  /** Slope over the second half of the run, MB per hour, and its standard error. */
  slopeMbPerHour: number;
  slopeErrorMbPerHour: number;
}

/** Least-squares slope of y over t (seconds), in units per hour, with its standard error. */
export function slopePerHour(points: ReadonlyArray<{ t: number; y: number }>): {
  slope: number;
  error: number;
} {
  const n = points.length;
  if (n < 3) return { slope: NaN, error: NaN };
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.t - mt) * (p.y - my);
    den += (p.t - mt) ** 2;
  }
  const slope = num / den;
  const residuals = points.reduce((a, p) => a + (p.y - my - slope * (p.t - mt)) ** 2, 0);
  return { slope: slope * 3600, error: Math.sqrt(residuals / (n - 2) / den) * 3600 };
}

export function rows(series: readonly Series[], halfSeconds: number): Row[] {
  return series.flatMap((s) => {
    const steady = s.samples.filter((p) => p.t >= halfSeconds);
    return METRICS.flatMap((metric) => {
      const points = steady
        .filter((p) => p[metric] !== undefined)
        .map((p) => ({ t: p.t, y: p[metric]! / 1048576 }));
      if (points.length === 0) return [];
      const { slope, error } = slopePerHour(points);
      const ys = points.map((p) => p.y);
      return [
        {
          target: s.target,
          process: s.process,
          metric,
          steadyMb: round(ys.reduce((a, y) => a + y, 0) / ys.length, 1),
          minMb: round(Math.min(...ys), 1),
          maxMb: round(Math.max(...ys), 1),
          slopeMbPerHour: round(slope, 2),
          slopeErrorMbPerHour: round(error, 2),
        },
      ];
    });
  });
}

export interface SoakGoal {
  what: string;
  target: string;
  measured: string;
  met: boolean;
}

/**
 * The soak's targets (#38): every process's RSS level over the second half (slope < 1 MB/h, met
 * when the slope is below it), and a gateway's and a worker's RSS at the soak's load ≤ 150 MB.
 */
export function soakGoals(table: readonly Row[]): SoakGoal[] {
  const out: SoakGoal[] = [];
  for (const row of table.filter((r) => r.metric === 'rss')) {
    const name = `${row.target} ${row.process}`;
    out.push({
      what: `RSS slope over the second half, ${name}`,
      target: '< 1 MB/h',
      measured: `${row.slopeMbPerHour} ± ${row.slopeErrorMbPerHour} MB/h`,
      met: row.slopeMbPerHour < 1,
    });
    if (row.process === 'gateway' || row.process === 'worker')
      out.push({
        what: `RSS at the soak's load, ${name}`,
        target: '≤ 150 MB',
        measured: `${row.steadyMb} MB (${row.minMb}–${row.maxMb})`,
        met: row.maxMb <= 150,
      });
  }
  return out;
}

/** What each process's steady RSS is made of: file-backed, V8's pages, the rest (malloc, stacks). */
export function rssParts(table: readonly Row[]): string[] {
  const get = (r: Row, metric: Metric) =>
    table.find((x) => x.target === r.target && x.process === r.process && x.metric === metric);
  return table
    .filter((r) => r.metric === 'rss')
    .flatMap((r) => {
      const file = get(r, 'rssFile')?.steadyMb;
      const heap = get(r, 'heapTotal')?.steadyMb;
      if (file === undefined || heap === undefined) return [];
      const rest = round(r.steadyMb - file - heap, 1);
      return [
        `${r.target} ${r.process}: RSS ${r.steadyMb} MB = ${file} file-backed (the node binary) + ${heap} V8 heap pages + ${rest} other native (malloc: Buffers, SQLite, the allocator's free lists; stacks)`,
      ];
    });
}

/** A line chart of every series (MB over minutes), one colour per process and metric. */
export function chart(series: readonly Series[], minutes: number): string {
  const width = 760;
  const height = 360;
  const pad = { left: 60, right: 220, top: 30, bottom: 40 };
  const lines = series.flatMap((s) =>
    (['rss', 'heapTotal', 'heapUsed', 'external', 'disk'] as const).flatMap((metric) => {
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
