import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import type { PathsResult } from './paths.ts';

// Smoke runs of every benchmark with tiny sizes, so they never rot: each must run end to end
// against real servers and print and write numbers. (The numbers are not checked against
// targets: speed is measured by `npm run bench`, never asserted by a timed test.)

const run = promisify(execFile);
const script = (name: string) => fileURLToPath(new URL(name, import.meta.url));
const env = { ...process.env, KAFKA_BROKERS: inject('kafkaBrokers').join(',') };

describe('benchmarks (smoke sizes)', () => {
  it('npm run bench: every benchmark for every target (scale: in multi-broker), the new paths, a summary and a chart', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tidemark-bench-'));
    // Every benchmark but scale: test/e2e/multi-broker.kafka.test.ts runs its smoke on replicated
    // topics (the same code, one run instead of two).
    const { stdout } = await run(
      process.execPath,
      [
        script('bench.ts'),
        '--smoke',
        '--only',
        'live,resume,memory,restart,tenants,paths',
        '--out',
        out,
      ],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout).toContain('**Live delivery**');
    expect(stdout).toContain('**Targets**');
    const result = JSON.parse(readFileSync(join(out, 'bench-smoke.json'), 'utf8')) as {
      live: Array<{ target: string; eventsPerSec: number }>;
      resume: { rows: Array<{ target: string; seamMs: { p50: number } }>; storms: unknown[] };
      memory: Array<{ target: string }>;
    };
    expect(new Set(result.live.map((r) => r.target))).toEqual(
      new Set([
        'sdk-memory',
        'sdk-redis',
        'tidemark-embedded',
        'tidemark-kafka-1',
        'tidemark-kafka-2',
        'kafka-floor',
        'raw-socket',
      ]),
    );
    for (const row of result.live) expect(row.eventsPerSec).toBeGreaterThan(0);
    // Every live figure beside its ceiling: the same events written pre-framed by a bare process.
    expect(stdout).toContain('| of raw socket |');
    // Interleaved rounds (two at smoke sizes): each row keeps its rounds, paired by the goals.
    for (const row of result.live as Array<{ runs?: unknown[] }>) expect(row.runs).toHaveLength(2);
    expect(stdout).toMatch(/per server core vs the SDK.*median, .* over 2 interleaved rounds/);
    expect(stdout).toMatch(/share of the floor/);
    // The gateways' own CPU, for events/s per gateway core.
    for (const row of result.live.filter((r) => r.target.startsWith('tidemark-kafka')))
      expect(row).toHaveProperty('gatewayCores');
    for (const row of result.resume.rows) expect(row.seamMs.p50).toBeGreaterThan(0);
    expect(result.resume.storms).toHaveLength(5);
    expect(new Set(result.memory.map((r) => r.target))).toEqual(
      new Set(['sdk-memory', 'tidemark-embedded', 'tidemark-kafka-1']),
    );
    expect(readFileSync(join(out, 'smoke-chart.svg'), 'utf8')).toMatch(/^<svg/);
    // The new paths, each by its own script, with their targets in the summary.
    const { paths } = result as unknown as { paths: PathsResult };
    expect(paths.effects?.rows.map((row) => row.log)).toEqual([
      'embedded (tidemark dev)',
      'kafka (worker + gateway)',
    ]);
    for (const row of paths.effects?.rows ?? [])
      for (const ms of Object.values(row.p50Ms)) expect(ms).toBeGreaterThan(0);
    expect(paths.taskReads?.busy.p50).toBeGreaterThan(0);
    expect(paths.events).toMatchObject({ deliveries: 10, rejectedSignatures: 0 });
    expect(paths.otel?.rows.map((row) => row.sdk)).toHaveLength(3);
    for (const what of [
      'a keyed call over a plain one',
      'one durable step',
      'tasks/get with 5,000 other records',
      'webhook deliveries per worker core-second',
      'throughput lost to the OpenTelemetry SDK',
    ])
      expect(stdout).toContain(what);
    const restart = (result as unknown as { restart: Array<{ target: string; rssRatio: number }> })
      .restart;
    expect(restart.map((r) => r.target)).toEqual([
      'tidemark-embedded',
      'tidemark-kafka-1',
      'tidemark-kafka-1',
    ]);
    for (const row of restart) expect(row.rssRatio).toBeGreaterThan(0);
    // The noisy neighbour: alice reached every cap, and bob — within his limits — was never refused.
    expect(stdout).toContain('**Noisy neighbour**');
    const { tenants } = result as unknown as {
      tenants: {
        noisy: { refused: number };
        alice: Record<string, number>;
        badLoginsFromBobsAddress: number;
      };
    };
    expect(tenants.noisy.refused).toBe(0);
    expect(tenants.alice).toMatchObject({
      tasks: 64,
      sessions: 256,
      heldCalls: 32,
      closedPushes: 16,
      streams: 250,
    });
    // A stranger past the failures bob's address may have, and still going: bob is served.
    expect(tenants.badLoginsFromBobsAddress).toBeGreaterThan(31);
  }, 720_000);

  it('npm run bench:takeover: a kill -9 and a drain between two worker processes, timed', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'tidemark-takeover-')), 'takeover.json');
    const { stdout } = await run(
      process.execPath,
      [script('takeover.ts'), '--smoke', '--out', out],
      {
        env,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    // On a broker with Kafka's own group settings the workers join classic to keep 10 s.
    expect(stdout).toMatch(
      /kafka defaults broker, session timeout 10 s \(classic protocol\): kill -9 → takeover median [\d.]+ s/,
    );
    const { rows } = JSON.parse(readFileSync(out, 'utf8')) as {
      rows: Array<{ broker: string; groupSessionTimeoutMs: number; takeoverMedianS: number }>;
    };
    expect(rows.map((row) => [row.broker, row.groupSessionTimeoutMs])).toEqual([
      ['kafka defaults', 10_000],
    ]);
    // Nothing moves a dead member's partitions before its session times out.
    expect(rows[0]!.takeoverMedianS).toBeGreaterThan(10);
  }, 300_000);

  it('npm run bench:fanout: what the gateways fetch per event delivered, with two gateways, on every lane', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'tidemark-fanout-')), 'fanout.json');
    const { stdout } = await run(process.execPath, [script('fanout.ts'), '--smoke', '--out', out], {
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).toMatch(
      /tasks lane, 2 gateway\(s\): \d+ events delivered; gateways fetched [\d.]+ records per event/,
    );
    const { rows } = JSON.parse(readFileSync(out, 'utf8')) as {
      rows: Array<{ lane: string; gateways: number; recordsPerEvent: number }>;
    };
    expect(rows.map((row) => `${row.lane} ${row.gateways}`)).toEqual([
      'session 2',
      'stateless 2',
      'tasks 2',
    ]);
    // Every event delivered was fetched at least once by some gateway — and, the keys minted onto
    // the minting gateway's partitions, about once. With random keys two gateways read 1.8 per
    // event (the session lane); a task's stream, polled by a reader of its own, 2.4. A task's
    // replay read and its creation's answer cost it a little more than a call (1.35 with one gateway).
    for (const row of rows) expect(row.recordsPerEvent).toBeGreaterThanOrEqual(1);
    const limit = { session: 1.5, stateless: 1.5, tasks: 2 } as Record<string, number>;
    for (const row of rows)
      expect(row.recordsPerEvent, row.lane).toBeLessThanOrEqual(limit[row.lane]!);
  }, 300_000);

  it('npm run bench:assignment: the broker moves only the partitions a joining or leaving member must, at 20 members and 200 partitions', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'tidemark-assignment-')), 'assignment.json');
    const { stdout } = await run(
      process.execPath,
      [script('assignment.ts'), '--smoke', '--out', out],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout).toMatch(
      /a member joins: 21 members, \d+ partitions moved \(fewest possible \d+\)/,
    );
    const { rows } = JSON.parse(readFileSync(out, 'utf8')) as {
      rows: Array<{ event: string; moved: number; minimum: number; members: number }>;
    };
    expect(rows.map((row) => `${row.event} ${row.members}`)).toEqual([
      'start 20',
      'a member joins 21',
      'a member joins 22',
      'a member leaves 21',
      'a member leaves 20',
    ]);
    // Local: a scale event moves the joiner's new share or the leaver's old one — nothing else.
    for (const row of rows.slice(1)) {
      expect(row.minimum).toBeGreaterThan(0);
      expect([row.event, row.moved]).toEqual([row.event, row.minimum]);
    }
  }, 300_000);

  it('npm run profile: a CPU profile, a flame graph and a table per server process', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tidemark-profile-'));
    const { stdout } = await run(
      process.execPath,
      [
        script('profile.ts'),
        '--target',
        'tidemark-kafka-1',
        '--events',
        '400',
        '--clients',
        '2',
        '--out',
        out,
      ],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout).toMatch(/tidemark-kafka-1: 400 events, 2 clients: \d+ events\/s/);
    const files = readdirSync(out).sort();
    for (const role of ['gateway', 'worker'])
      for (const ext of ['cpuprofile', 'md', 'svg'])
        expect(files).toContain(`tidemark-kafka-1-${role}.${ext}`);
    expect(readFileSync(join(out, 'tidemark-kafka-1-gateway.svg'), 'utf8')).toMatch(/^<svg/);
    expect(readFileSync(join(out, 'tidemark-kafka-1-gateway.md'), 'utf8')).toContain(
      '**Self time**',
    );
  }, 300_000);

  it('npm run soak: samples every process of both targets under churn and prints slopes and a chart', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tidemark-soak-'));
    const { stdout } = await run(
      process.execPath,
      [
        script('soak.ts'),
        '--minutes',
        '0.25',
        '--sample-seconds',
        '2',
        '--clients',
        '3',
        '--out',
        out,
      ],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout).toContain('| target | process | metric |');
    const soak = JSON.parse(readFileSync(join(out, 'soak.json'), 'utf8')) as {
      results: Array<{ target: string; counts: { sessions: number; calls: number } }>;
      series: Array<{ target: string; process: string; samples: Array<{ rss: number }> }>;
      steadyState: Array<{ metric: string; slopeMbPerHour: number }>;
    };
    expect(soak.results.map((r) => r.target)).toEqual(['tidemark-embedded', 'tidemark-kafka']);
    for (const r of soak.results) expect(r.counts.calls).toBeGreaterThan(0);
    expect(soak.series.map((s) => s.process)).toEqual(['dev', 'worker', 'gateway']);
    for (const s of soak.series) expect(s.samples.length).toBeGreaterThanOrEqual(3);
    expect(soak.steadyState.some((row) => row.metric === 'disk')).toBe(true);
    // What the RSS is made of, and every target met or missed with its spread.
    for (const metric of ['heapTotal', 'rssFile'])
      expect(soak.steadyState.filter((row) => row.metric === metric)).toHaveLength(3);
    expect(stdout).toMatch(/tidemark-kafka gateway: RSS [\d.]+ MB = [\d.]+ file-backed/);
    expect(stdout).toMatch(
      /(met {3}|MISSED) RSS slope over the second half, tidemark-embedded dev: -?[\d.]+ ± [\d.]+ MB\/h/,
    );
    expect(stdout).toMatch(
      /(met {3}|MISSED) RSS at the soak's load, tidemark-kafka worker: [\d.]+ MB \([\d.]+–[\d.]+\)/,
    );
    expect(readFileSync(join(out, 'soak.svg'), 'utf8')).toMatch(/^<svg/);
  }, 300_000);

  it('npm run bench:log', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tidemark-bench-'));
    const log = await run(
      process.execPath,
      [script('log-bench.ts'), '--records', '2000', '--out', join(out, 'log.json')],
      { env, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(log.stdout).toMatch(/kafka/i);
  }, 300_000);
});
