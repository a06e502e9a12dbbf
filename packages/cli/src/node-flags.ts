// V8 and glibc size their memory from the machine, not from what the process needs, and on a host
// with many gigabytes that is most of a Tidemark process's resident memory (measured by
// `npm run soak`: smaps, v8.getHeapSpaceStatistics):
//
// - V8's young generation: 64 MB semi-spaces on a 24 GB machine, ~115 MB of a gateway's 290 MB RSS
//   with ~40 MB of heap in use. Tidemark's garbage is short-lived (one message, one event), so a
//   16 MB semi-space costs little throughput.
// - V8's old generation grows by a factor picked from its limit: 4× the live heap when the limit is
//   2 GB or more (the default above 8 GB of memory), 1.3–2× below it. A worker holding 51 MB live
//   kept 200 MB of old-generation pages. The limit is 1 GB, or ¾ of the container's memory limit
//   when that is less: the rest is left to buffers, native code and the binary itself.
// - glibc's malloc raises its trim and mmap thresholds as large blocks come and go, and then keeps
//   freed memory (115 MB of a worker's RSS was "other native"). A fixed trim threshold keeps both
//   thresholds where they start; two arenas are plenty for one JavaScript thread and a few helpers.
//
// All of these are read when the process starts, so the command starts itself again, in place
// (execve: same pid, same descriptors), with what is missing. Each one the operator set is kept.

/** The semi-space size (MB) Tidemark starts Node with unless told otherwise. */
const DEFAULT_SEMI_SPACE_MB = 16;
/** The old-generation limit (MB) without a container limit below it: under V8's 2 GB step. */
const DEFAULT_OLD_SPACE_MB = 1024;
const MB = 1024 * 1024;

/** glibc's tunables, set unless the operator set them; other C libraries ignore them. */
const MALLOC_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '131072' } as const;

/** Set in the restarted process's environment. */
const RESTARTED = 'TIDEMARK_NODE_RESTARTED';

/** What the process starts again with: Node flags before its own, and environment variables. */
export interface NodeRestart {
  flags: string[];
  env: Record<string, string>;
}

/** The memory the process may use: the container's limit (0 or huge when none) and the machine's. */
export interface MemoryLimits {
  constrained: number;
  total: number;
}

/**
 * What to start again with, or undefined when there is nothing to add. A flag given on the command
 * line or in NODE_OPTIONS is kept; `TIDEMARK_SEMI_SPACE_MB` / `TIDEMARK_OLD_SPACE_MB` choose another
 * size, or `node` for Node's own.
 */
export function nodeRestart(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
  memory: MemoryLimits,
): NodeRestart | undefined {
  const given = (flag: string): boolean =>
    execArgv.some((a) => a.startsWith(flag)) || (env['NODE_OPTIONS'] ?? '').includes(flag);
  const flags: string[] = [];
  const semi = size(env, 'TIDEMARK_SEMI_SPACE_MB', [1, 1024], DEFAULT_SEMI_SPACE_MB);
  if (semi !== undefined && !given('--max-semi-space-size'))
    flags.push(`--max-semi-space-size=${semi}`);
  const old = size(env, 'TIDEMARK_OLD_SPACE_MB', [64, 65536], oldSpaceFor(memory));
  if (old !== undefined && !given('--max-old-space-size'))
    flags.push(`--max-old-space-size=${old}`);
  const missing = Object.entries(MALLOC_ENV).filter(([name]) => env[name] === undefined);
  // Once restarted, never again: whatever the new process lacks, it runs as it is.
  if (env[RESTARTED] !== undefined || (flags.length === 0 && missing.length === 0))
    return undefined;
  return { flags, env: { ...Object.fromEntries(missing), [RESTARTED]: '1' } };
}

/** ¾ of a container limit below the default's, else the default; never under 64 MB. */
function oldSpaceFor({ constrained, total }: MemoryLimits): number {
  const limited = constrained > 0 && constrained < total;
  if (!limited) return DEFAULT_OLD_SPACE_MB;
  return Math.max(64, Math.min(DEFAULT_OLD_SPACE_MB, Math.floor((constrained * 0.75) / MB)));
}

/** A size in MB from the environment: undefined for `node`, the default when unset. */
function size(
  env: NodeJS.ProcessEnv,
  name: string,
  [least, most]: [number, number],
  fallback: number,
): number | undefined {
  const chosen = env[name]?.trim();
  if (chosen === 'node') return undefined;
  if (chosen === undefined || chosen === '') return fallback;
  const mb = Number(chosen);
  if (!Number.isInteger(mb) || mb < least || mb > most)
    throw new Error(
      `${name} must be a whole number of MB from ${least} to ${most}, or "node" for Node's own default; got "${chosen}"`,
    );
  return mb;
}
