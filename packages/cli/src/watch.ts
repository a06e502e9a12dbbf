import { watch, type FSWatcher } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { messageOf } from '@tidemark/protocol';
import { loadToolModules, type ToolModule, type Worker } from '@tidemark/worker';
import { sayTools } from './banner.js';
import type { Logger } from './logger.js';

/**
 * `tidemark dev --watch`: when a tool module's file changes, it is imported again and the worker
 * takes the new modules (probed first: one that fails leaves the old ones serving, and says why).
 * Sessions live on — they are in the log — and their clients are told the tools changed. Only the
 * module files themselves are watched (what they import is loaded once), and packages not at all.
 * What happened is said to the person at the terminal (`say`): the tools now served, or why the
 * change was not taken — once per distinct problem, not at every save of the same broken file.
 */
export function watchToolModules(
  specifiers: readonly string[],
  worker: Worker,
  io: { logger: Logger; say: (line: string) => void; cwd: string },
  /** Modules that are not files (hosted MCP servers): kept as they are on each reload. */
  kept: readonly ToolModule[] = [],
): { close(): void } {
  const files = specifiers.filter((s) => s.startsWith('file:')).map((s) => fileURLToPath(s));
  let reloads = 0;
  let timer: NodeJS.Timeout | undefined;
  let lastProblem: string | undefined;
  const reload = async () => {
    try {
      const modules = await loadToolModules(specifiers, { reload: ++reloads });
      await worker.replaceModules([...modules, ...kept]);
      lastProblem = undefined;
      io.logger.debug({ tools: modules.map((m) => m.name) }, 'tool modules reloaded');
      sayTools(io.say, 'reloaded; tools:', worker.modules, io.cwd);
    } catch (error) {
      const problem = messageOf(error);
      io.logger.debug({ err: error }, 'tool modules not reloaded');
      if (problem === lastProblem) return;
      lastProblem = problem;
      io.say(`not reloaded (the previous modules keep serving): ${problem}`);
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
