// Profiles `tidemark dev` under the live-delivery load: writes a .cpuprofile and prints the
// functions with the most self time. `node test/bench/profile-dev.ts [events] [clients]`
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from './load.ts';
import { BIN, ROOT, startChild } from './support.ts';

const events = Number(process.argv[2] ?? 20_000);
const clients = Number(process.argv[3] ?? 10);
const dir = mkdtempSync(join(tmpdir(), 'tidemark-prof-'));
const data = mkdtempSync(join(tmpdir(), 'tidemark-prof-data-'));
const { process: dev, match } = await startChild(
  [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    BIN,
    'dev',
    '--port',
    '0',
    '--data',
    data,
    '--tools',
    join(ROOT, 'test/bench/bench-tools.ts'),
  ],
  /MCP endpoint: (\S+)/,
  { TIDEMARK_LOG_LEVEL: 'warn' },
);
const sessions = await Promise.all(
  Array.from({ length: clients }, async () => {
    const s = new Session(match[1]!);
    await s.initialize();
    return s;
  }),
);
const started = performance.now();
await Promise.all(sessions.map((s) => s.ticker(Math.ceil(events / clients), 0)));
const seconds = (performance.now() - started) / 1000;
console.log(`${events} events, ${clients} clients: ${Math.round(events / seconds)} events/s`);
await dev.stop();
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!;
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    hitCount?: number;
  }>;
};
const total = profile.nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
const byFunction = new Map<string, number>();
for (const node of profile.nodes) {
  const url = node.callFrame.url.replace(/^.*node_modules\//, '').replace(/^.*\/work\/main\//, '');
  const key = `${node.callFrame.functionName || '(anon)'} ${url}:${node.callFrame.lineNumber}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + (node.hitCount ?? 0));
}
for (const [key, hits] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 40))
  console.log(`${((hits / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
console.log(`profile: ${join(dir, file)}`);
