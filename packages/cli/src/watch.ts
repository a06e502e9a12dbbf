import { watch, type FSWatcher } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadToolModules, type Worker } from '@tidemark/worker';
import type { Logger } from './logger.js';

/**
 * `tidemark dev --watch`: when a tool module's file changes, it is imported again and the worker
 * takes the new modules (probed first: one that fails leaves the old ones serving, and says why).
 * Sessions live on — they are in the log — and their clients are told the tools changed. Only the
 * module files themselves are watched (what they import is loaded once), and packages not at all.
 */
export function watchToolModules(
  specifiers: readonly string[],
  worker: Worker,
  log: Logger,
): { close(): void } {
  const files = specifiers.filter((s) => s.startsWith('file:')).map((s) => fileURLToPath(s));
  let reloads = 0;
  let timer: NodeJS.Timeout | undefined;
  const reload = async () => {
    reloads++;
    // A new URL makes the module loader import the file again (it caches by URL).
    const fresh = specifiers.map((s) => (s.startsWith('file:') ? `${s}?reload=${reloads}` : s));
    try {
      const modules = await loadToolModules(fresh);
      await worker.replaceModules(modules);
      log.info({ tools: modules.map((m) => m.name) }, 'tool modules reloaded');
    } catch (error) {
      log.error({ err: error }, 'tool modules not reloaded; the previous ones keep serving');
    }
  };
  const watchers: FSWatcher[] = files.map((file) =>
    watch(file, () => {
      // Editors write in several steps: one reload after the burst.
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), 150);
    }),
  );
  return {
    close() {
      clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
