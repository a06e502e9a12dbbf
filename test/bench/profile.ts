// `npm run profile`: CPU profiles of the servers under the live-delivery load, for the hot paths.
// Every server process of the target runs with --cpu-prof; for each, writes the .cpuprofile (open
// it in Chrome DevTools or speedscope), a flame graph (SVG) and a table of the functions with the
// most self and total time, into --out (docs/benchmarks/profiles/ for the committed ones).
//
//   npm run profile -- --target tidemark-kafka-1 --events 40000 --clients 10
//   npm run profile -- --target tidemark-embedded --label before
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  copyFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveKafka } from '@tidemark/kafka-fixtures';
import { Session } from './load.ts';
import { cpuMs, startTarget, TARGETS, type TargetName } from './targets.ts';
import { flameGraphSvg, hotFunctions, type CpuProfile } from './flame.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'tidemark-kafka-1' },
    events: { type: 'string', default: '100000' },
    clients: { type: 'string', default: '10' },
    out: { type: 'string', default: 'test/bench/results/profiles' },
    label: { type: 'string', default: '' },
  },
});
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
  const sessions = await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const session = new Session(server.urls[i % server.urls.length]!);
      await session.initialize();
      return session;
    }),
  );
  // A short warm-up, so the profile is about the steady state, not JIT and first connections.
  await Promise.all(sessions.map((s) => s.ticker(200, 0)));
  const cpuBefore = server.processes.map((p) => cpuMs(p.child.pid!));
  const started = performance.now();
  await Promise.all(sessions.map((s) => s.ticker(Math.ceil(events / clients), 0)));
  const seconds = (performance.now() - started) / 1000;
  const cores = server.processes.map(
    (p, i) => (cpuMs(p.child.pid!) - cpuBefore[i]!) / 1000 / seconds,
  );
  await server.stop();
  const rate = Math.round(events / seconds);
  console.log(
    `${target}: ${events} events, ${clients} clients: ${rate} events/s; server cores ${cores.map((c) => c.toFixed(2)).join(' + ')}`,
  );
  mkdirSync(values.out, { recursive: true });
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const role = roleOf(profile);
    const name = [target, role, values.label].filter((s) => s !== '').join('-');
    copyFileSync(join(dir, file), join(values.out, `${name}.cpuprofile`));
    const title = `${name}: ${events} events, ${clients} clients, ${rate} events/s`;
    writeFileSync(join(values.out, `${name}.svg`), flameGraphSvg(profile, title));
    const table = hotFunctions(profile, 25);
    writeFileSync(join(values.out, `${name}.md`), `# ${title}\n\n${table}\n`);
    console.log(`\n${name}\n${table}`);
  }
  console.log(`\nprofiles: ${values.out}`);
} finally {
  await kafka?.stop();
}

/** Which process a profile is of, from where its samples ran. */
function roleOf(profile: CpuProfile): string {
  const hits = (part: string) =>
    profile.nodes
      .filter((n) => n.callFrame.url.includes(part))
      .reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
  if (hits('/embedded-log/dist/') > 0) return 'dev';
  const worker = hits('/worker/dist/');
  const gateway = hits('/gateway/dist/');
  if (worker === 0 && gateway === 0) return 'server';
  return worker > gateway ? 'worker' : 'gateway';
}
