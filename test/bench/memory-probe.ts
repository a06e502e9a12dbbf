// Preloaded into a server process by the memory benchmark (`--import`): on SIGUSR2 it collects
// garbage and prints {"memory": {...}} on stderr, so heap per session is read after a full GC.
// Beside the heap it reads what the kernel counts, to explain the RSS outside it: the pages V8 holds
// (heapTotal, garbage and free space included), and the RSS backed by files (the node binary's
// code, shared by every process that maps it) versus anonymous memory (the heap, malloc).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const kb = (status: string, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
let snapshots = 0;
process.on('SIGUSR2', () => {
  // Read before collecting: a GC's reclaimed pages would otherwise hide what V8 held.
  const { heapTotal } = process.memoryUsage();
  gc();
  gc();
  // The RSS a second later: the collector's sweeping threads give the freed pages back meanwhile.
  setTimeout(() => {
    gc();
    const status = readFileSync('/proc/self/status', 'utf8');
    const {
      rss,
      heapUsed,
      external,
      arrayBuffers,
      heapTotal: heapTotalAfter,
    } = process.memoryUsage();
    const memory = {
      rss,
      heapUsed,
      external,
      arrayBuffers,
      heapTotal,
      heapTotalAfterGc: heapTotalAfter,
      rssFile: kb(status, 'RssFile'),
      rssAnon: kb(status, 'RssAnon'),
    };
    process.stderr.write(`${JSON.stringify({ memory })}\n`);
    // What the heap holds, for a closer look (Chrome DevTools' Memory tab, or a diff of two).
    const dir = process.env['TIDEMARK_BENCH_HEAP_DIR'];
    if (dir !== undefined)
      writeHeapSnapshot(join(dir, `${process.pid}-${++snapshots}.heapsnapshot`));
  }, 1_000);
});
