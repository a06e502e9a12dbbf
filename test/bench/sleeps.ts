// Durable sleep at scale: `tasks` tasks of the sleeper module (`nap`) fall asleep at once on a
// worker with four task slots (Kafka, a worker and a gateway process). Reported: what one sleeping
// call costs the worker (RSS and heap a second after a full GC: before — once a tenth as many tasks
// slept and woke — and once all are asleep, per call); how long a plain call takes while they sleep
// (they hold no slot); and how late each wakes — its `wokeAtMs` against its journaled sleep start
// plus the sleep — p50/p99/max.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { PROBE_OPTIONS } from './memory.ts';
import {
  benchTopics,
  percentile,
  readMemory,
  ROOT,
  round,
  startWorkerAndGateway,
  statelessRpc,
  type MemoryReading,
} from './support.ts';

export interface SleepsOptions {
  brokers: readonly string[];
  /** Tasks asleep at once. */
  tasks: number;
  /** How long each sleeps: long enough for all to be created and measured before the first wakes. */
  sleepMs: number;
  /**
   * Tasks that sleep two seconds (off memory: a sleep under a second waits in place) and wake
   * before the baseline: a worker that has run tasks (its code compiled, its Kafka client's
   * buffers grown to their batches), so the growth measured is what sleeping tasks hold, not what
   * running the first tasks at all costs.
   * @default a tenth of `tasks`
   */
  warmTasks?: number;
}

export interface SleepsResult {
  tasks: number;
  sleepMs: number;
  createSeconds: number;
  warmTasks: number;
  /** The worker once started (one plain call), once warm (`warmTasks` woke), once all asleep. */
  worker: { cold: MemoryReading; before: MemoryReading; asleep: MemoryReading };
  rssPerSleepingCallBytes: number;
  heapPerSleepingCallBytes: number;
  /** A plain `tools/call` (`nap` of 0 ms) while every task sleeps. */
  plainCallMs: number;
  wakeLateMs: { p50: number; p99: number; max: number };
  /** Wakes run per second, first to last (the wakes come at the rate the tasks were created). */
  wakesPerSecond: number;
}

const TASKS_EXTENSION = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

/** A request as the sleeps bench sends it: declaring the Tasks extension unless `tasks` is false. */
const rpc = (url: string, method: string, params: Record<string, unknown>, tasks = true) =>
  statelessRpc(url, method, params, {
    name: 'bench-sleeps',
    capabilities: tasks ? TASKS_EXTENSION : {},
  });

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>) {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += width)
    results.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return results;
}

/**
 * The worker's memory once every task is asleep: the last of them may still be starting when the
 * last is created (they start four at a time, each running to its sleep), and what a starting
 * call holds is not what a sleeping one does. Read until the heap stops shrinking (two readings
 * 2 s apart within 1 %), at most 30 s.
 */
async function settledMemory(worker: Parameters<typeof readMemory>[0]): Promise<MemoryReading> {
  let last = await readMemory(worker);
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const next = await readMemory(worker);
    const settled = Math.abs(next.heapUsed - last.heapUsed) <= last.heapUsed * 0.01;
    last = next;
    if (settled) break;
  }
  return last;
}

/**
 * Waits for every task of `ids` (each sleeping `sleepMs`) to complete; each one's lateness (its
 * `wokeAtMs` against its journaled sleep start plus its sleep) and wake time. Wakes run in task slots (four here): a storm
 * of them takes its time; a lost one never comes (an error past `deadlineMs`).
 */
async function wakes(url: string, ids: readonly string[], sleepMs: number, deadlineMs: number) {
  const late: number[] = [];
  const woke: number[] = [];
  await inBatches(ids, 50, async (taskId) => {
    for (;;) {
      const task = await rpc(url, 'tasks/get', { taskId });
      if (task['status'] === 'completed') {
        const { asleepAtMs, wokeAtMs } = (task['result'] as { structuredContent: never })
          .structuredContent as { asleepAtMs: number; wokeAtMs: number };
        late.push(wokeAtMs - asleepAtMs - sleepMs);
        woke.push(wokeAtMs);
        return;
      }
      if (task['status'] !== 'working')
        throw new Error(`task ${taskId}: ${String(task['status'])}`);
      if (Date.now() > deadlineMs)
        throw new Error(`task ${taskId} never woke: ${JSON.stringify(task).slice(0, 400)}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  });
  return { late, woke };
}

/** Creates `count` tasks of `nap` sleeping `ms` each, 100 at a time; their task ids. */
async function createTasks(url: string, count: number, ms: number): Promise<string[]> {
  const created = await inBatches(
    Array.from({ length: count }, (_, i) => i),
    100,
    () => rpc(url, 'tools/call', { name: 'nap', arguments: { ms } }),
  );
  return created.map((task) => String(task['taskId']));
}

export async function runSleeps(options: SleepsOptions): Promise<SleepsResult> {
  const { tasks, sleepMs } = options;
  const flags = await benchTopics(options.brokers, 'sleeps');
  const env = {
    ...process.env,
    TIDEMARK_LOG_LEVEL: 'warn',
    TIDEMARK_SECRET: randomBytes(32).toString('hex'),
    NODE_OPTIONS: PROBE_OPTIONS,
  };
  const stack = await startWorkerAndGateway(flags, env, {
    worker: [
      '--tools',
      join(ROOT, 'test/bench/modules/sleeper.ts'),
      '--max-concurrent-tasks',
      '4',
      '--max-tasks-per-subject',
      '4',
      // Every sleep leaves memory, the warm-up's short ones too: the path a long sleep takes.
      '--sleep-in-memory',
      '0',
    ],
  });
  const worker = stack.processes[0]!.child;
  try {
    const warm = await rpc(stack.url, 'tools/call', { name: 'nap', arguments: { ms: 0 } }, false);
    if (warm['structuredContent'] === undefined) throw new Error('nap did not answer');
    const cold = await readMemory(worker);
    const warmTasks = options.warmTasks ?? Math.ceil(tasks / 10);
    const warmStarted = Date.now();
    await wakes(
      stack.url,
      await createTasks(stack.url, warmTasks, 2_000),
      2_000,
      warmStarted + 60_000 + warmTasks * 50,
    );
    const before = await settledMemory(worker);
    const createStarted = Date.now();
    const ids = await createTasks(stack.url, tasks, sleepMs);
    const createSeconds = (Date.now() - createStarted) / 1000;
    // Asleep once the worker took them all: their slots are free, so a plain call runs now.
    const plainStarted = performance.now();
    await rpc(stack.url, 'tools/call', { name: 'nap', arguments: { ms: 0 } }, false);
    const plainCallMs = performance.now() - plainStarted;
    const asleep = await settledMemory(worker);
    if (Date.now() - createStarted > sleepMs)
      throw new Error(`the tasks woke before the reading: sleep longer than ${sleepMs} ms`);
    const { late, woke } = await wakes(
      stack.url,
      ids,
      sleepMs,
      createStarted + sleepMs + 60_000 + tasks * 50,
    );
    late.sort((a, b) => a - b);
    const wakeSeconds = (Math.max(...woke) - Math.min(...woke)) / 1000;
    return {
      tasks,
      sleepMs,
      warmTasks,
      createSeconds: round(createSeconds, 1),
      worker: { cold, before, asleep },
      rssPerSleepingCallBytes: Math.round((asleep.rss - before.rss) / tasks),
      heapPerSleepingCallBytes: Math.round((asleep.heapUsed - before.heapUsed) / tasks),
      plainCallMs: round(plainCallMs),
      wakeLateMs: {
        p50: round(percentile(late, 50)),
        p99: round(percentile(late, 99)),
        max: round(late.at(-1) ?? 0),
      },
      wakesPerSecond: Math.round(tasks / Math.max(wakeSeconds, 0.001)),
    };
  } catch (error) {
    // What the worker said is the first thing to read when a wake went missing.
    console.error(`the worker's last lines:\n${worker.output().split('\n').slice(-40).join('\n')}`);
    throw error;
  } finally {
    for (const { child } of stack.processes.reverse()) await child.stop();
  }
}

/** The table `npm run bench` prints. */
export function sleepsTable(r: SleepsResult): string {
  const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
  return [
    `Durable sleep: ${r.tasks.toLocaleString('en')} tasks asleep at once on 4 task slots (created in ${r.createSeconds} s), on a worker that ran ${r.warmTasks.toLocaleString('en')} sleeping tasks before its baseline, Kafka`,
    '',
    '| worker RSS cold → warm → all asleep | per sleeping call (RSS / heap) | plain call meanwhile | wake late p50 / p99 / max | wakes/s |',
    '| --- | --- | --- | --- | --- |',
    `| ${mb(r.worker.cold.rss)} → ${mb(r.worker.before.rss)} → ${mb(r.worker.asleep.rss)} MB | ${round(r.rssPerSleepingCallBytes / 1024, 1)} / ${round(r.heapPerSleepingCallBytes / 1024, 1)} KiB | ${r.plainCallMs} ms | ${r.wakeLateMs.p50} / ${r.wakeLateMs.p99} / ${r.wakeLateMs.max} ms | ${r.wakesPerSecond} |`,
  ].join('\n');
}
