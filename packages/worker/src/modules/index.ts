/**
 * modules/ — tool modules from files. `loadToolModules` imports them, saying each file's error
 * where it is; `probeToolModules` lists what they register, with no log, at startup.
 */
export { loadToolModules, toToolModule } from './module-loader.js';
export { probeToolModules } from './module-probe.js';
export type { ModuleListing } from './module-probe.js';
