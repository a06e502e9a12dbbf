// `npm run profile`: CPU profiles of the servers under the live-delivery load, for the hot paths.
// Every server process of the target runs with --cpu-prof; for each, writes the .cpuprofile (open
// it in Chrome DevTools or speedscope), a flame graph (SVG) and a table of the functions with the
// most self and total time, into --out (docs/benchmarks/profiles/ for the committed ones).
//
//   npm run profile -- --target tidemark-kafka-1 --events 40000 --clients 10
//   npm run profile -- --target tidemark-embedded --label before
//   npm run profile -- --target tidemark-kafka-2 --load storm --clients 5000   # all resume at once
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  copyFileSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { Session } from './load.ts';
import { cpuMs, roleOf, startTarget, TARGETS, type TargetName } from './targets.ts';
import { flameGraphSvg, hotFunctions, type CpuProfile } from './flame.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'tidemark-kafka-1' },
    events: { type: 'string', default: '100000' },
    clients: { type: 'string', default: '10' },
    out: { type: 'string', default: 'test/bench/results/profiles' },
    label: { type: 'string', default: '' },
    load: { type: 'string', default: 'live' },
  },
});
if (values.load !== 'live' && values.load !== 'storm') {
  console.error(`profile: --load is live or storm; got ${values.load}`);
  process.exit(2);
}
const target = values.target as TargetName;
if (!(TARGETS as readonly string[]).includes(target)) {
  console.error(`profile: --target is one of ${TARGETS.join(', ')}; got ${target}`);
  process.exit(2);
}
const events = Number(values.events);
const clients = Number(values.clients);
if (!(events > 0) || !(clients > 0)) {
  console.error('profile: --events and --clients must be positive numbers');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'tidemark-prof-'));
const kafka = target.startsWith('tidemark-kafka')
  ? await resolveKafka({ log: (line) => console.error(line) })
  : undefined;
try {
  const server = await startTarget(target, {
    ...(kafka === undefined ? {} : { brokers: kafka.brokers }),
    nodeOptions: `--cpu-prof --cpu-prof-dir=${dir}`,
  });
  const cpuOf = () => server.processes.map((p) => cpuMs(p.child.pid!));
  let cpuBefore: number[];
  let started: number;
  let what: string;
  if (values.load === 'storm') {
    // Every session has a finished stream of 10 events; all resume at once (as in npm run bench).
    const resumes = await prepareStorm(server.urls, clients);
    cpuBefore = cpuOf();
    started = performance.now();
    await Promise.all(resumes.map(({ session, id }) => session.resumeToEnd(id, () => undefined)));
    what = `${clients} sessions resuming at once`;
  } else {
    const sessions = await Promise.all(
      Array.from({ length: clients }, async (_, i) => {
        const session = new Session(server.urls[i % server.urls.length]!);
        await session.initialize();
        return session;
      }),
    );
    // A short warm-up, so the profile is about the steady state, not JIT and first connections.
    await Promise.all(sessions.map((s) => s.ticker(200, 0)));
    cpuBefore = cpuOf();
    started = performance.now();
    await Promise.all(sessions.map((s) => s.ticker(Math.ceil(events / clients), 0)));
    what = `${events} events, ${clients} clients`;
  }
  const seconds = (performance.now() - started) / 1000;
  const cores = cpuOf().map((cpu, i) => (cpu - cpuBefore[i]!) / 1000 / seconds);
  await server.stop();
  const rate =
    values.load === 'storm'
      ? `all done in ${Math.round(seconds * 1000)} ms`
      : `${Math.round(events / seconds)} events/s`;
  console.log(
    `${target}: ${what}: ${rate}; server cores ${cores.map((c) => c.toFixed(2)).join(' + ')}`,
  );
  mkdirSync(values.out, { recursive: true });
  // `tidemark` restarts itself in place (same pid) with its Node flags: the image that ran first
  // wrote a profile of its start too. Per pid, the last one written is the process's.
  const byPid = new Map<string, string>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort((a, b) => statSync(join(dir, a)).mtimeMs - statSync(join(dir, b)).mtimeMs))
    byPid.set(file.split('.')[3]!, file);
  const files = [...byPid.values()];
  // Which process wrote a profile, by its pid (Node names them CPU.<date>.<time>.<pid>.…): a guess
  // from where the samples ran named a gateway with few samples wrongly under load (CI).
  const roles = new Map(server.processes.map((p) => [p.child.pid!, roleOf(server, p)]));
  const used = new Set<string>();
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const role = roles.get(Number(file.split('.')[3])) ?? 'server';
    const base = [target, role, values.load === 'storm' ? 'storm' : '', values.label]
      .filter((s) => s !== '')
      .join('-');
    // Two gateways: the second is -2.
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base}-${n}`;
    used.add(name);
    copyFileSync(join(dir, file), join(values.out, `${name}.cpuprofile`));
    const title = `${name}: ${what}, ${rate}`;
    writeFileSync(join(values.out, `${name}.svg`), flameGraphSvg(profile, title));
    const table = hotFunctions(profile, 25);
    writeFileSync(join(values.out, `${name}.md`), `# ${title}\n\n${table}\n`);
    console.log(`\n${name}\n${table}`);
  }
  console.log(`\nprofiles: ${values.out}`);
} finally {
  await kafka?.stop();
}

/** Sessions with a finished stream of 10 events each, spread over the endpoints, 50 at a time. */
async function prepareStorm(
  urls: readonly string[],
  count: number,
): Promise<Array<{ session: Session; id: string }>> {
  const prepared: Array<{ session: Session; id: string }> = [];
  for (let i = 0; i < count; i += 50)
    prepared.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, count - i) }, async (_, j) => {
          const session = new Session(urls[(i + j) % urls.length]!);
          await session.initialize();
          let from: string | undefined;
          await session.ticker(10, 0, (t) => (from ??= t.id));
          return { session, id: from! };
        }),
      )),
    );
  return prepared;
}
