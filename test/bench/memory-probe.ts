// Preloaded into a server process by the memory benchmark (`--import`): on SIGUSR2 it collects
// garbage and prints {"memory": {...}} on stderr, so heap per session is read after a full GC.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
process.on('SIGUSR2', () => {
  gc();
  gc();
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(
    `${JSON.stringify({ memory: { rss, heapUsed, external, arrayBuffers } })}\n`,
  );
});
