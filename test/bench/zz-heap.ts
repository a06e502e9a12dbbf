import v8 from 'node:v8';
import { readFileSync } from 'node:fs';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';
import sleeper from './modules/sleeper.ts';

const N = Number(process.argv[2] ?? 2000);
const stack = await embeddedStack({ modules: [sleeper], worker: { maxConcurrentTasks: 4, maxTasksPerSubject: 4 } });
const url = stack.gateways[0]!.url;
await rpc(url, 'tools/call', { name: 'nap', arguments: { ms: 0 } }, { tasks: false });
function agg(file: string) {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  const f = snap.snapshot.meta.node_fields; const types = snap.snapshot.meta.node_types[0];
  const n = f.length; const nodes = snap.nodes; const strings = snap.strings;
  const iType = f.indexOf('type'), iName = f.indexOf('name'), iSize = f.indexOf('self_size');
  const m = new Map<string, [number, number]>();
  for (let i = 0; i < nodes.length; i += n) {
    const key = `${types[nodes[i + iType]]}:${types[nodes[i+iType]]==='object'||types[nodes[i+iType]]==='closure' ? strings[nodes[i + iName]] : ''}`;
    const e = m.get(key) ?? [0, 0]; e[0]++; e[1] += nodes[i + iSize]; m.set(key, e);
  }
  return m;
}
(globalThis as any).gc?.();
const a = agg(v8.writeHeapSnapshot('/tmp/h-before.heapsnapshot'));
for (let i = 0; i < N; i += 100)
  await Promise.all(Array.from({ length: Math.min(100, N - i) }, () => rpc(url, 'tools/call', { name: 'nap', arguments: { ms: 600_000 } })));
await new Promise((r) => setTimeout(r, 2000));
(globalThis as any).gc?.();
const b = agg(v8.writeHeapSnapshot('/tmp/h-after.heapsnapshot'));
const diff = [...b].map(([k, [c, s]]) => [k, c - (a.get(k)?.[0] ?? 0), s - (a.get(k)?.[1] ?? 0)] as const).sort((x, y) => y[2] - x[2]).slice(0, 45);
for (const [k, c, s] of diff) console.log(String(Math.round(s / N)).padStart(6), (c / N).toFixed(2).padStart(7), k);
console.log('total per call', Math.round(diff.reduce((t, d) => t + d[2], 0) / N));
process.exit(0);
