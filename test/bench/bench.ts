// `npm run bench`: live delivery, resume and memory, side by side — the SDK's single-process
// transport (in-memory and Redis event stores), Tidemark embedded, Tidemark on Kafka with one and
// two gateways, and the raw Kafka floor — in one run on this machine. Writes
// test/bench/results/bench.json, then the summary (SUMMARY.md and chart.svg).
//
//   npm run bench                    # the full run (about 15 minutes on 2 cores)
//   npm run bench -- --smoke         # tiny sizes, every benchmark and target (what npm test runs)
//   npm run bench -- --only live     # one benchmark (live, resume, memory, restart, tenants, scale, paths, sleeps); the others' results are kept
//   npm run bench -- --only resume --targets tidemark-kafka-2 --storm 10000 --out /tmp/storm
//
// The load generator is this process; every server is a separate process on loopback. On a
// 2-core machine they share the cores: each figure says how many each side used.
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { runLive } from './live.ts';
import { runMemory } from './memory.ts';
import { runPaths } from './paths.ts';
import { runRestart } from './restart.ts';
import { runTenants } from './tenants.ts';
import { runResume } from './resume.ts';
import { runScale } from './scale-events.ts';
import { runSleeps, sleepsTable } from './sleeps.ts';
import { writeSummary } from './summary.ts';
import { machine, writeResult } from './support.ts';
import { TARGETS, type TargetName } from './targets.ts';

const { values } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    only: { type: 'string' },
    targets: { type: 'string' },
    storm: { type: 'string' },
    out: { type: 'string', default: 'test/bench/results' },
  },
});
const smoke = values.smoke;
const BENCHMARKS = ['live', 'resume', 'memory', 'restart', 'tenants', 'scale', 'paths', 'sleeps'];
const only = new Set((values.only ?? BENCHMARKS.join(',')).split(','));
for (const name of only)
  if (!BENCHMARKS.includes(name)) {
    console.error(`bench: --only takes ${BENCHMARKS.join(', ')}; got ${name}`);
    process.exit(2);
  }
const targets = (values.targets?.split(',') ?? [...TARGETS]) as TargetName[];
for (const t of targets)
  if (!(TARGETS as readonly string[]).includes(t)) {
    console.error(`bench: unknown target ${t} (one of ${TARGETS.join(', ')})`);
    process.exit(2);
  }

const kafka = await resolveKafka({ log: (line) => console.error(line) });
const brokers = kafka.brokers;
const started = Date.now();
try {
  const file = `${values.out}/${smoke ? 'bench-smoke' : 'bench'}.json`;
  // With --only, the other benchmarks' results of the last run are kept.
  const previous =
    values.only !== undefined && existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>)
      : {};
  const result: Record<string, unknown> = { ...previous, machine: machine(), smoke };
  if (only.has('live'))
    result['live'] = await runLive({
      targets,
      brokers,
      clients: smoke ? [1, 4] : [1, 10, 100],
      events: smoke ? 200 : 20_000,
      pacedTicks: smoke ? 10 : 100,
      paceMs: 20,
      rounds: smoke ? 2 : 3,
    });
  if (only.has('resume'))
    result['resume'] = await runResume({
      targets,
      brokers,
      replays: smoke ? [10, 100] : [10, 1_000, 100_000],
      repeats: smoke ? 3 : 20,
      stormSessions: Number(values.storm ?? (smoke ? 20 : 1_000)),
      ...(smoke || values.storm !== undefined ? {} : { twoGatewayStorm: 10_000 }),
    });
  if (only.has('memory'))
    result['memory'] = await runMemory({
      targets: targets.filter((t) => t !== 'sdk-redis' && t !== 'tidemark-kafka-2'),
      brokers,
      counts: smoke ? [20] : [1_000, 10_000],
      settleMs: smoke ? 0 : 4_000,
    });
  if (only.has('restart'))
    result['restart'] = await runRestart({
      targets: (['tidemark-embedded', 'tidemark-kafka-1'] as const).filter((t) =>
        targets.includes(t),
      ),
      brokers,
      sessions: smoke ? 50 : 5_000,
      largeCalls: smoke ? 1 : 20,
    });
  // A noisy neighbour: one subject at every cap, another's calls beside it (tidemark dev).
  if (only.has('tenants')) result['tenants'] = await runTenants({ calls: smoke ? 20 : 300 });
  // Workers 2 → 6 → 2, gateways 2 → 4 → 2 and a rolling restart, under load (Kafka).
  if (only.has('scale')) result['scale'] = await runScale({ brokers, smoke });
  // Effects, tasks/get on a busy partition, Events deliveries, OpenTelemetry: their own scripts.
  if (only.has('paths')) result['paths'] = await runPaths({ brokers, smoke });
  // Tasks asleep at once (`ex.sleep`): memory per sleeping call, a plain call meanwhile, wake lateness.
  if (only.has('sleeps')) {
    const sleeps = await runSleeps({
      brokers,
      tasks: smoke ? 40 : 10_000,
      sleepMs: smoke ? 6_000 : 90_000,
    });
    result['sleeps'] = sleeps;
    console.log(`${sleepsTable(sleeps)}\n`);
  }
  result['seconds'] = Math.round((Date.now() - started) / 1000);
  writeResult(file, result);
  const summary = writeSummary(result, values.out, smoke ? 'smoke-' : '');
  console.log(summary);
  console.log(`\nresults: ${file}`);
} finally {
  await kafka.stop();
}
