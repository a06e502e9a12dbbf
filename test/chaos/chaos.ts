// The chaos runner: concurrent sessions call `count` and `flaky_count` — one call in four asleep
// (`ex.sleep`) before it counts, one in five waiting for a signal (`ex.signal`) — through a cluster of real gateway and worker processes while
// faults are injected at random — worker kill -9 and drains,
// gateway kill -9, client socket cuts, clients held away while their events are deleted. One
// client in three is a 2026-07-28 client whose calls are durable tasks (@tidemark/client, polled or
// listened to). Every call is classified by the checker against a timeline of what the runner did
// and what the broker saw. Exits 1 on any call silently wrong, lost (accepted and never answered)
// or reset with nothing to cause it; on an error no connection fault explains (a worker's death
// ends in a takeover or a reset, never an error; an error the server answered, never); on a durable step run twice when the runner did
// not kill the process that ran it first; when fewer calls were made than the load should make
// (sessions × seconds / 4) or too few succeed; and when a fault kind never fired. Stopped by
// SIGTERM or SIGINT (a test's timeout), it prints what it has so far, the calls still under way
// and its seed.
//
//   npm run chaos                           # the long profile (10 min, 16 sessions)
//   npm run chaos -- --profile ci           # the short one `npm test` runs
//   npm run chaos -- --seconds 60 --sessions 8 --seed 7
//   npm run chaos -- --profile partitions   # network partitions instead (root: namespaces, iptables)
//
// The partitions profiles (partitions.ts) put the broker and every process on a host of its own and
// cut hosts apart instead of killing processes; `partitions-ci` is the short one `npm test` runs.
//
// Kafka: KAFKA_BROKERS, else Testcontainers, else the local broker (infra/kafka).
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KafkaLog } from '@tidemark/kafka';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { readStampedRecord } from '@tidemark/protocol';
import { classify, tally, type Outcome, type Verdict } from '../e2e/checker.ts';
import { TrackedClient, type CallWindow, type CheckedCall } from '../e2e/calls.ts';
import { checkedTask } from '../e2e/task-calls.ts';
import { Cluster, sleep } from '../e2e/cluster.ts';
import { countEffects, type EffectCount } from './effects.ts';
import { checkAudit } from './audit-check.ts';
import { startPartitioned, type PartitionedCluster } from './partitions.ts';
import { faultReport, Timeline, type Fault, type Firing } from './timeline.ts';

const PROFILES = {
  ci: { seconds: 45, sessions: 6, faultEveryMs: 4_000, callTimeoutMs: 90_000, network: false },
  long: { seconds: 600, sessions: 16, faultEveryMs: 5_000, callTimeoutMs: 180_000, network: false },
  'partitions-ci': {
    seconds: 60,
    sessions: 4,
    faultEveryMs: 3_000,
    callTimeoutMs: 90_000,
    network: true,
  },
  partitions: {
    seconds: 300,
    sessions: 8,
    faultEveryMs: 5_000,
    callTimeoutMs: 180_000,
    network: true,
  },
} as const;

const { values } = parseArgs({
  options: {
    profile: { type: 'string', default: 'long' },
    seconds: { type: 'string' },
    sessions: { type: 'string' },
    seed: { type: 'string' },
  },
});
const profile = PROFILES[values.profile as keyof typeof PROFILES] as
  (typeof PROFILES)[keyof typeof PROFILES] | undefined;
if (profile === undefined) {
  console.error(
    `chaos: --profile must be one of ${Object.keys(PROFILES).join(', ')}, got ${values.profile}`,
  );
  process.exit(2);
}
const seconds = Number(values.seconds ?? profile.seconds);
const sessions = Number(values.sessions ?? profile.sessions);
if (!(seconds > 0) || !Number.isInteger(sessions) || sessions < 1) {
  console.error('chaos: --seconds and --sessions must be positive numbers');
  process.exit(2);
}

// A small seeded generator (mulberry32), so a run that found something can be replayed.
let seed = Number(values.seed ?? Date.now() % 2 ** 31);
const firstSeed = seed;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));

// Every call takes one durable step (counting's `effect`), recorded by the workers in this file.
const effectsFile = join(mkdtempSync(join(tmpdir(), 'tidemark-chaos-')), 'effects.jsonl');
process.env['TIDEMARK_EFFECTS'] = effectsFile;
/**
 * The pids the runner killed -9 or cut from the broker past their session: only theirs excuse a
 * durable step's second run (its outcome may not have reached the journal).
 */
const killedPids = new Set<number>();
const setup: Omit<PartitionedCluster, 'faults'> & { faults?: Record<string, Fault> } =
  profile.network
    ? await startPartitioned('chaos', { pick, excuse: (pid) => void killedPids.add(pid) })
    : await startOnBroker();
const { cluster, brokers } = setup;
const log = new KafkaLog({ brokers: [...brokers] });

/** The process faults' cluster: on KAFKA_BROKERS, else a broker of its own. */
async function startOnBroker() {
  const kafka = await resolveKafka({ log: (line) => console.error(line) });
  const started = await Cluster.start({
    brokers: kafka.brokers,
    label: 'chaos',
    partitions: 4,
    gateways: 2,
    workers: 2,
    // Workers sign signal URLs: one call in five waits for a signal it answers itself.
    signals: true,
  });
  return {
    cluster: started,
    brokers: kafka.brokers,
    stop: () => started.stop().finally(() => kafka.stop()),
  };
}
const faults: Record<string, number> = {};
const verdicts: Array<Verdict & { call: string; window: CallWindow }> = [];
/** What was seen of each call judged wrong, lost or needlessly reset — repeated in the summary. */
const flagged: string[] = [];
function flag(line: string): void {
  flagged.push(line);
  console.error(line);
}
/**
 * Session-lane calls, classified again once the run is over: whether a reset had a cause is asked of
 * the whole timeline (a membership change is seen by polling, a moment after the reset it caused).
 */
const judged: Array<() => Verdict & { call: string; window: CallWindow }> = [];
const errors = new Map<string, number>();
/** The effect keys of the calls that succeeded: each must have been applied, once. */
const answeredEffects = new Set<string>();
const deadline = Date.now() + seconds * 1000;
let stopping = false;
let tasks = 0;
/** What the runner did and the broker saw, when: what may excuse a reset or an error. */
const timeline = new Timeline();
/** Each fault the runner injected, when: the report per fault. */
const firings: Firing[] = [];
/** The calls under way, by name, with when each started: what a stopped run reports. */
const underWay = new Map<string, number>();
/** Runs a call, known as under way until it ends. */
async function tracked<T>(name: string, call: () => Promise<T>): Promise<T> {
  underWay.set(name, Date.now());
  try {
    return await call();
  } finally {
    underWay.delete(name);
  }
}
/**
 * Task calls that errored, sent again with their key, and ran as another task: each a broken
 * promise ("Side effects, once": docs/how-to/idempotency.md).
 */
const resent: string[] = [];
let resends = 0;
/** Errored calls, each asked at the end of the run whether a fault was near it. */
const erroredCalls: Array<{
  call: string;
  message: string;
  during: CallWindow;
  answered: boolean;
}> = [];

/**
 * Counts an errored call's message; whether a fault explains it is asked at the end. An error the
 * server answered (`answered`) is never a connection fault's: none of the runner's faults excuses it.
 */
function errored(call: string, message: string, during: CallWindow, answered = false): void {
  const short = message.replace(/[0-9a-f]{8,}/g, '…').slice(0, 160);
  errors.set(short, (errors.get(short) ?? 0) + 1);
  erroredCalls.push({ call, message: short, during, answered });
}

/** The errored calls no fault explains: each one is a failure of the run. */
function unexplainedErrors(): string[] {
  const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
  return erroredCalls
    .filter(({ during, answered }) => answered || !timeline.explainsError(during))
    .map(
      ({ call, message, during, answered }) =>
        `${call} (${at(during.startedMs)}–${at(during.endedMs)}): ${answered ? 'answered ' : ''}${message}`,
    );
}

/** A 2026-07-28 client: each call a task, awaited across whatever the faults do. */
async function taskSession(index: number): Promise<void> {
  for (let n = 0; Date.now() < deadline; n++) {
    const flaky = random() < 0.25;
    const to = between(5, 40);
    const startedMs = Date.now();
    const name = `task session ${index} call ${n}`;
    const sent = {
      tool: flaky ? 'flaky_count' : 'count',
      to,
      delayMs: between(10, 80),
      // Half the tasks are followed on a listen stream, which the faults cut (gateway kills).
      follow: n % 2 === 0 ? ('poll' as const) : ('listen' as const),
      extra: {
        effect: true,
        ...(flaky ? { failAt: between(1, to), failAttempts: between(1, 2) } : {}),
        ...mix(),
      },
      timeoutMs: profile!.callTimeoutMs,
      idempotencyKey: randomUUID(),
    };
    const task = await tracked(name, () => checkedTask(cluster.url, sent));
    verdicts.push({ ...task.verdict, call: name, window: { startedMs, endedMs: Date.now() } });
    if (task.effect !== undefined) answeredEffects.add(task.effect);
    tasks++;
    if (task.verdict.outcome === 'errored') {
      const created = task.seen.statuses.length === 0 ? 'not created' : 'ended';
      errored(name, `task ${created}: ${task.seen.why ?? ''}`, {
        startedMs,
        endedMs: Date.now(),
      });
      await sleep(250);
      await sendAgain(name, sent, task);
    }
    if (task.verdict.outcome === 'silently-wrong' || task.verdict.outcome === 'lost') {
      const { statuses, ...seen } = task.seen;
      flag(
        `!! ${name}: ${task.verdict.why} ${JSON.stringify(seen)}, ${statuses.length} statuses, last ${statuses.at(-1)}`,
      );
      if (seen.taskId !== undefined) await report(seen.taskId);
    }
  }
}

/**
 * An errored task call sent again with its idempotency key, as a client that was told its call
 * failed does: the same call — the task it created, if it did, and one effect (the effects file
 * counts it) — never a second task.
 */
async function sendAgain(
  name: string,
  sent: Parameters<typeof checkedTask>[1],
  first: Awaited<ReturnType<typeof checkedTask>>,
): Promise<void> {
  const startedMs = Date.now();
  resends++;
  const again = await tracked(`${name}, sent again`, () => checkedTask(cluster.url, sent));
  verdicts.push({
    ...again.verdict,
    call: `${name}, sent again with its key`,
    window: { startedMs, endedMs: Date.now() },
  });
  if (again.effect !== undefined) answeredEffects.add(again.effect);
  if (first.taskId !== undefined && again.taskId !== undefined && again.taskId !== first.taskId)
    resent.push(`${name}: task ${first.taskId}, sent again with its key: task ${again.taskId}`);
  if (again.verdict.outcome === 'errored')
    errored(`${name}, sent again`, `task: ${again.seen.why ?? ''}`, {
      startedMs,
      endedMs: Date.now(),
    });
}

/**
 * What a call does before it counts: one in four sleeps (`ex.sleep`), one in five (on a cluster
 * whose workers sign signal URLs) waits for a signal (`ex.signal`) it answers itself through the
 * balancer — asleep or waiting through the faults, woken on time or by the answer.
 */
function mix(): Record<string, number> {
  const draw = random();
  if (draw < 0.25) return { napMs: between(1_000, 3_000) };
  if (draw < 0.45 && !profile!.network) return { signalAfterMs: between(500, 2_500) };
  return {};
}

async function session(index: number): Promise<void> {
  if (index % 3 === 2) return taskSession(index);
  const client = await TrackedClient.connect(cluster.url, `chaos-${index}`, 60);
  try {
    for (let n = 0; Date.now() < deadline; n++) {
      const flaky = random() < 0.25;
      const to = between(5, 40);
      const session = client.session;
      const name = `session ${index} call ${n}`;
      const call: CheckedCall = await tracked(name, () =>
        client.call({
          logLost: (during) => timeline.deleted(session, during),
          tool: flaky ? 'flaky_count' : 'count',
          to,
          delayMs: between(10, 80),
          extra: {
            effect: true,
            ...(flaky ? { failAt: between(1, to), failAttempts: between(1, 2) } : {}),
            ...mix(),
          },
          timeoutMs: profile!.callTimeoutMs,
        }),
      );
      if (call.effect !== undefined) answeredEffects.add(call.effect);
      judged.push(() => {
        const verdict = classify(to, call.seen, {
          logLost: timeline.deleted(session, call.window),
          resetExcused: (reason) =>
            timeline.resetExcused(reason, session, call.window, { retried: flaky }),
        });
        if (verdict.outcome === 'needless-reset')
          flag(`!! ${name} (${clock(call.window)}): ${verdict.why} ${JSON.stringify(call.seen)}`);
        return { ...verdict, call: name, window: call.window };
      });
      for (const seen of call.seen)
        if (seen.kind === 'error') errored(name, seen.message, call.window, seen.answered);
      // A client told its call failed backs off before the next, as an agent would (a held
      // balancer refuses connections for a second or so; a tight loop would count each refusal).
      if (call.verdict.outcome === 'errored') await sleep(250);
      if (!['exact', 'reset', 'errored'].includes(call.verdict.outcome)) {
        flag(
          `!! session ${index} call ${n} (${clock(call.window)}): ${call.verdict.why} ${JSON.stringify(call.seen)}\n   client transport: ${client.transportErrors.slice(-8).join(' | ')}`,
        );
        await report(session);
      }
    }
  } finally {
    await client.close();
  }
}

/** A call's window as wall-clock times, to set beside the faults' and the processes' logs. */
function clock({ startedMs, endedMs }: CallWindow): string {
  const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
  return `${at(startedMs)}–${at(endedMs)}`;
}

/** Every record of `events` on a partition that is still there, up to `below` (default: the end). */
async function* recordsOf(partition: number, below?: bigint) {
  const { logStartOffset, highWatermark } = await log.offsets(cluster.names.events, partition);
  const end = below ?? highWatermark;
  for (let offset = logStartOffset; offset < end;) {
    const fetched = await log.fetch(cluster.names.events, partition, offset, { maxWaitMs: 0 });
    for (const record of fetched.records) if (record.offset < end) yield record;
    if (fetched.records.length === 0) break;
    offset = fetched.nextOffset;
  }
}

/** What the log and the processes hold of a key: the evidence for a failed call. */
async function report(key: string): Promise<void> {
  const lines: string[] = [];
  for (let partition = 0; partition < cluster.partitions; partition++) {
    // From what is left: the runner deletes events as one of its faults.
    for await (const record of recordsOf(partition)) {
      if (record.key !== key) continue;
      const read = readStampedRecord(record);
      const { stream, generation, kind, seq } = read?.stamp ?? {};
      const payload = JSON.stringify(read?.payload ?? null).slice(0, 120);
      lines.push(
        `   events ${partition}@${record.offset} ${new Date(record.timestampMs).toISOString().slice(11, 23)} ${stream} ${generation?.epoch.slice(0, 8)}/${generation?.attempt} ${kind} ${seq} ${payload}`,
      );
    }
  }
  const membership = ['"assigned"', 'group ', 'handoff'].flatMap((m) => cluster.linesMentioning(m));
  for (const line of [
    ...cluster.linesMentioning(key),
    ...cluster.linesMentioning('stateless'),
    ...membership,
  ])
    lines.push(`   ${line.slice(0, 400)}`);
  console.error(lines.join('\n'));
}

const FAULTS: Record<string, Fault> = setup.faults ?? {
  'worker kill -9': {
    kind: 'worker',
    run: async () => {
      const victim = pick(cluster.workers);
      killedPids.add(victim.process.child.pid!);
      await cluster.kill(victim);
      await cluster.startWorker();
    },
  },
  'worker drain (SIGTERM)': {
    kind: 'worker',
    run: async () => {
      const victim = pick(cluster.workers);
      await cluster.startWorker();
      await cluster.kill(victim, 'SIGTERM');
    },
  },
  'gateway kill -9': {
    kind: 'gateway',
    run: async () => {
      const victim = pick(cluster.gateways);
      const replacement = await cluster.startGateway();
      cluster.release(replacement);
      killedPids.add(victim.process.child.pid!);
      await cluster.kill(victim);
    },
  },
  'client sockets cut': {
    kind: 'cut',
    run: () => {
      cluster.cut(pick(cluster.gateways));
      return Promise.resolve();
    },
  },
  'clients away while their events are deleted': {
    kind: 'hold',
    run: async () => {
      cluster.hold();
      await sleep(between(300, 1_500));
      const partition = between(0, cluster.partitions - 1);
      const { highWatermark } = await log.offsets(cluster.names.events, partition);
      // Which calls lose records is read from the log itself, before they go.
      const keys = new Set<string>();
      for await (const record of recordsOf(partition, highWatermark))
        if (record.key !== null) keys.add(record.key);
      const deleting = Date.now();
      await log.deleteRecordsBefore(cluster.names.events, partition, highWatermark);
      timeline.record('delete', deleting, Date.now(), keys);
      cluster.release(pick(cluster.gateways));
    },
  },
};

/** Each kind once, in a seeded order, so every run fires every kind; then at random. */
function faultOrder(): () => string {
  const first = Object.keys(FAULTS)
    .map((name) => ({ name, order: random() }))
    .sort((a, b) => a.order - b.order)
    .map(({ name }) => name);
  return () => first.shift() ?? pick(Object.keys(FAULTS));
}

async function chaos(): Promise<void> {
  const next = faultOrder();
  while (!stopping && Date.now() < deadline - 2_000) {
    await sleep(between(profile!.faultEveryMs / 2, profile!.faultEveryMs * 1.5));
    if (stopping) return;
    const name = next();
    faults[name] = (faults[name] ?? 0) + 1;
    console.error(`fault: ${name} at ${new Date().toISOString().slice(11, 23)}`);
    const fault = FAULTS[name]!;
    const startMs = Date.now();
    await timeline.around(fault.kind, fault.run);
    firings.push({ name, startMs, endMs: Date.now() });
  }
}

const started = Date.now();
console.error(
  `chaos: ${sessions} sessions, ${seconds} s, seed ${firstSeed}, cluster of 2 gateways and 2 workers on ${brokers.join(',')}${profile.network ? ', each on a host of its own' : ''}`,
);
/** At least this share of the calls must succeed (exact or reset): the faults are not that many. */
const MIN_SUCCEEDED = 0.75;
/**
 * At least this many calls: a call counts 5–40 numbers 10–80 ms apart (about a second), so a
 * healthy cluster makes well over one call per session every 4 s, faults and all — a cluster
 * answering a tenth of its calls falls below it. Under network cuts a call caught by one waits out
 * a session timeout (6 s) or a handoff: one call per session every 6 s (a loaded 2-core CI run
 * made 53 in 60 s with 4 sessions, every one of them right).
 */
const MIN_CALLS = Math.ceil((sessions * seconds) / (profile.network ? 6 : 4));

/** Why the run failed, if it did: one line per broken rule. */
function failures(
  counts: Record<Outcome, number>,
  unexplained: readonly string[],
  effects: EffectCount,
): string[] {
  const broken: string[] = [];
  if (effects.duplicated.length > 0)
    broken.push(
      `${effects.duplicated.length} effects applied again with no kill to excuse it: ${effects.duplicated
        .slice(0, 3)
        .map((d) => d.text)
        .join('; ')}`,
    );
  if (effects.lost.length > 0)
    broken.push(
      `${effects.lost.length} calls answered without their effect: ${effects.lost.slice(0, 3).join('; ')}`,
    );
  if (resent.length > 0)
    broken.push(
      `${resent.length} calls sent again with their key ran again: ${resent.slice(0, 3).join('; ')}`,
    );
  for (const outcome of ['silently-wrong', 'lost', 'needless-reset'] as const)
    if (counts[outcome] > 0) broken.push(`${counts[outcome]} ${outcome}`);
  if (unexplained.length > 0)
    broken.push(
      `${unexplained.length} errored with no fault near: ${unexplained.slice(0, 3).join('; ')}`,
    );
  if (verdicts.length < MIN_CALLS)
    broken.push(
      `only ${verdicts.length} calls for ${sessions} sessions × ${seconds} s (< ${MIN_CALLS})`,
    );
  const never = Object.keys(FAULTS).filter((name) => faults[name] === undefined);
  if (never.length > 0)
    broken.push(`fault kinds never fired (a run too short?): ${never.join(', ')}`);
  const succeeded = counts.exact + counts.reset;
  if (succeeded < MIN_SUCCEEDED * verdicts.length)
    broken.push(
      `only ${succeeded} of ${verdicts.length} calls succeeded (< ${MIN_SUCCEEDED * 100}%)`,
    );
  return broken;
}

// Stopped from outside (a test's timeout, ^C): what it has so far, the calls still under way —
// a lost call is one of them — and the seed to replay it with; then the cluster goes.
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.once(signal, () => {
    const now = Date.now();
    const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);
    console.log(
      [
        `chaos interrupted by ${signal} after ${Math.round((now - started) / 1000)} s (seed ${firstSeed})`,
        `  calls ended: ${verdicts.length + judged.length}, under way: ${underWay.size}`,
        `  faults injected: ${Object.entries(faults)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        ...[...underWay].map(
          ([name, startedMs]) =>
            `  UNDER WAY ${name} since ${at(startedMs)} (${Math.round((now - startedMs) / 1000)} s)`,
        ),
        `  FAILED: interrupted`,
      ].join('\n'),
    );
    console.error(
      `chaos failed — replay: npm run chaos -- --profile ${values.profile} --seed ${firstSeed}`,
    );
    setTimeout(() => process.exit(1), 10_000).unref();
    void Promise.allSettled([log.close()])
      .then(() => setup.stop())
      .finally(() => process.exit(1));
  });

let exitCode = 1;
try {
  const stopWatching = timeline.watchGroup(brokers, `${cluster.prefix}workers`);
  const running = Promise.all(Array.from({ length: sessions }, (_, i) => session(i)));
  const injecting = chaos();
  await running;
  stopping = true;
  await injecting;
  await stopWatching();
  verdicts.push(...judged.map((judge) => judge()));
  const unexplained = unexplainedErrors();
  const counts = tally(verdicts);
  const injected = Object.values(faults).reduce((a, b) => a + b, 0);
  const effects = countEffects(effectsFile, answeredEffects, killedPids);
  const audit = await checkAudit(log, cluster.names.audit, effectsFile, answeredEffects);
  const broken = [
    ...failures(counts, unexplained, effects),
    ...(audit.missing.length === 0
      ? []
      : [
          `${audit.missing.length} answered calls not in the audit trail as answered: ${audit.missing.slice(0, 3).join('; ')}`,
        ]),
  ];
  // A step run twice: what the log and the workers say of its session (the first two).
  for (const duplicate of effects.duplicated.slice(0, 2)) {
    console.error(`duplicated effect ${duplicate.text}`);
    await report(duplicate.session);
  }
  console.log(
    [
      `chaos summary (${Math.round((Date.now() - started) / 1000)} s, seed ${firstSeed})`,
      `  calls: ${verdicts.length} (${tasks} of them tasks)`,
      `  faults injected: ${injected} (${Object.entries(faults)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')})`,
      `  exact: ${counts.exact}, reset: ${counts.reset}, errored: ${counts.errored} (${unexplained.length} with no fault near)`,
      `  silently wrong: ${counts['silently-wrong']}, lost: ${counts.lost}, needless resets: ${counts['needless-reset']}`,
      `  errored task calls sent again with their key: ${resends}, run as another task: ${resent.length}`,
      `  effects: ${effects.applied} applied for ${answeredEffects.size} answered calls, ${effects.inFlight} steps run again after their process was killed -9 or cut from the broker past its session (same effect key), duplicated: ${effects.duplicated.length}, lost: ${effects.lost.length}`,
      `  audit trail: ${audit.exported} calls exported, once each (${Object.entries(audit.outcomes)
        .map(([k, v]) => `${k} ${v}`)
        .join(
          ', ',
        )}), every answered call among them: ${audit.missing.length === 0 ? 'yes' : 'no'}`,
      ...faultReport(firings, verdicts).map((line) => `  ${line}`),
      ...[...errors]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([message, count]) => `  errored ×${count}: ${message}`),
      // The calls' own lines first: a failure's message is cut to its end (run-chaos.ts).
      ...flagged.slice(0, 3).map((line) => `  ${line.slice(0, 1500)}`),
      ...broken.map((line) => `  FAILED: ${line}`),
    ].join('\n'),
  );
  exitCode = broken.length === 0 && verdicts.length > 0 ? 0 : 1;
} finally {
  await log.close();
  await setup.stop();
  // Last, so that no cut of the output loses it: how to run this again.
  if (exitCode !== 0)
    console.error(
      `chaos failed — replay: npm run chaos -- --profile ${values.profile} --seed ${firstSeed}`,
    );
}
process.exit(exitCode);
