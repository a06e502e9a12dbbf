// Resume: from the reconnecting GET (Last-Event-ID) to the first replayed event and to the end of
// the replay (the live seam: here the stream's final response), for replays of several lengths;
// and a reconnect storm, every session resuming at once.
import { readFileSync } from 'node:fs';
import { nowMs, Session } from './load.ts';
import { percentile, round } from './support.ts';
import { cpuMs, startTarget, type Target, type TargetName } from './targets.ts';

export interface ResumeOptions {
  targets: readonly TargetName[];
  replays: readonly number[];
  /** Resumes measured per replay length (fewer for long ones: at most 3 beyond 10,000). */
  repeats: number;
  stormSessions: number;
  /** The storm's size for Tidemark with two gateways, when larger (the 10,000-resume target). */
  twoGatewayStorm?: number;
  brokers?: readonly string[];
}

export interface ResumeRow {
  target: string;
  replay: number;
  firstEventMs: { p50: number; p99: number };
  seamMs: { p50: number; p99: number };
  /** Most reconnects one resume needed (the server closes a stream its client reads too slowly). */
  reconnects: number;
  /** Fewest replayed events a resume received (less than `replay`: the server lost some). */
  received: number;
}

export interface StormRow {
  target: string;
  sessions: number;
  allResumedMs: number;
  firstEventP99Ms: number;
  /** CPU seconds each side spent during the storm: where its time went on shared cores. */
  cpuSeconds?: { load: number; gateways: number; otherServers: number; machine: number };
}

/** Starts counting CPU time: of this process (the load), the gateways and the other servers. */
function cpuOf(target: Target): () => NonNullable<StormRow['cpuSeconds']> {
  const gateways = new Set((target.gateways ?? []).map((p) => p.child.pid!));
  const others = target.processes.map((p) => p.child.pid!).filter((pid) => !gateways.has(pid));
  const sum = (pids: Iterable<number>) => [...pids].reduce((total, pid) => total + cpuMs(pid), 0);
  const before = {
    load: process.cpuUsage(),
    gateways: sum(gateways),
    others: sum(others),
    machine: machineBusyMs(),
  };
  return () => {
    const load = process.cpuUsage(before.load);
    return {
      load: round((load.user + load.system) / 1e6, 1),
      gateways: round((sum(gateways) - before.gateways) / 1000, 1),
      otherServers: round((sum(others) - before.others) / 1000, 1),
      // Every process's, the broker's included: what is left of the cores.
      machine: round((machineBusyMs() - before.machine) / 1000, 1),
    };
  };
}

/** CPU time every core spent busy since boot, from /proc/stat (Linux; USER_HZ = 100). */
function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1);
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / 100;
}

/** Resumes from `id` to the end (reconnecting as a client does) and times the first event and the end. */
async function timedResume(
  session: Session,
  id: string,
  expected: number,
): Promise<{ first: number; seam: number; reconnects: number; received: number }> {
  const started = nowMs();
  let first = Number.NaN;
  const { ticks, reconnects } = await session.resumeToEnd(id, () => {
    if (Number.isNaN(first)) first = nowMs() - started;
  });
  const seam = nowMs() - started;
  // Fewer than expected is a finding, not a crash: reported as `received` next to the figures.
  void expected;
  return { first: Number.isNaN(first) ? seam : first, seam, reconnects, received: ticks };
}

export async function runResume(
  options: ResumeOptions,
): Promise<{ rows: ResumeRow[]; storms: StormRow[] }> {
  const rows: ResumeRow[] = [];
  const storms: StormRow[] = [];
  for (const name of options.targets) {
    const target = await startTarget(name, {
      ...(options.brokers ? { brokers: options.brokers } : {}),
    });
    try {
      const session = new Session(target.urls[0]!);
      await session.initialize();
      for (const replay of options.replays) {
        // Resume from the first progress event (not a priming event): `replay` events follow it.
        let from: string | undefined;
        await session.ticker(replay + 1, 0, (t) => (from ??= t.id));
        const repeats = replay > 10_000 ? Math.min(3, options.repeats) : options.repeats;
        const firsts: number[] = [];
        const seams: number[] = [];
        let reconnects = 0;
        let received = replay;
        for (let i = 0; i < repeats; i++) {
          // Alternate replicas when there are two: a resume on the other gateway.
          const resumer =
            target.urls.length > 1 && i % 2 === 1
              ? Object.assign(new Session(target.urls[1]!), { id: session.id })
              : session;
          const timed = await timedResume(resumer, from!, replay);
          const { first, seam, reconnects: r } = timed;
          received = Math.min(received, timed.received);
          firsts.push(first);
          seams.push(seam);
          reconnects = Math.max(reconnects, r);
          // Untimed: let the server notice the last replay's connection closed (the SDK allows
          // one connection per stream and answers 409 to a second).
          await new Promise((resolve) => setTimeout(resolve, 30));
        }
        firsts.sort((a, b) => a - b);
        seams.sort((a, b) => a - b);
        const row = {
          target: name,
          replay,
          firstEventMs: { p50: round(percentile(firsts, 50)), p99: round(percentile(firsts, 99)) },
          seamMs: { p50: round(percentile(seams, 50)), p99: round(percentile(seams, 99)) },
          reconnects,
          received,
        };
        console.error(
          `resume ${name} replay ${replay}: first ${row.firstEventMs.p50} ms, seam ${row.seamMs.p50} ms`,
        );
        rows.push(row);
      }
      // The storm: every session has a finished stream of 10 events; all resume at once.
      const sessions: Array<{ session: Session; id: string }> = [];
      const stormSessions =
        name === 'tidemark-kafka-2' && options.twoGatewayStorm !== undefined
          ? Math.max(options.twoGatewayStorm, options.stormSessions)
          : options.stormSessions;
      for (let i = 0; i < stormSessions; i += 50)
        sessions.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(50, stormSessions - i) }, async (_, j) => {
              const s = new Session(target.urls[(i + j) % target.urls.length]!);
              await s.initialize();
              let from: string | undefined;
              await s.ticker(10, 0, (t) => (from ??= t.id));
              return { session: s, id: from! };
            }),
          )),
        );
      const cpu = cpuOf(target);
      const started = nowMs();
      const results = await Promise.all(
        sessions.map(({ session: s, id }) => timedResume(s, id, 9)),
      );
      const cpuSeconds = cpu();
      const firsts = results.map((r) => r.first).sort((a, b) => a - b);
      const storm = {
        target: name,
        sessions: sessions.length,
        allResumedMs: round(nowMs() - started, 0),
        firstEventP99Ms: round(percentile(firsts, 99)),
        cpuSeconds,
      };
      console.error(
        `resume storm ${name} ×${storm.sessions}: all done in ${storm.allResumedMs} ms; CPU s: ${JSON.stringify(cpuSeconds)}`,
      );
      storms.push(storm);
    } finally {
      await target.stop();
    }
  }
  return { rows, storms };
}
