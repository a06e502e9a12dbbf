// V8 sizes its young generation from the machine's memory, not from what the process needs: on a
// host with many gigabytes a semi-space grows to 64 MB and the new space holds ~120 MB of pages —
// most of a gateway's or worker's resident memory under load, with ~40 MB of heap in use (measured
// by `npm run soak`, v8.getHeapSpaceStatistics). Tidemark's garbage is short-lived (one message,
// one event), so a 16 MB semi-space costs little throughput and bounds the RSS an operator sets a
// limit by. The size is a startup flag — V8 reads it when it creates the heap — so the command
// starts itself again, in place (execve: same pid, same descriptors), with the flag added.

/** The semi-space size (MB) Tidemark starts Node with unless told otherwise. */
const DEFAULT_SEMI_SPACE_MB = 16;

const FLAG = '--max-semi-space-size';

/**
 * The Node flags to start again with, or undefined when there is nothing to add: the operator set
 * the flag (in the command line or NODE_OPTIONS), or asked for Node's own default with
 * `TIDEMARK_SEMI_SPACE_MB=node`.
 */
export function missingNodeFlags(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): string[] | undefined {
  const chosen = env['TIDEMARK_SEMI_SPACE_MB']?.trim();
  if (chosen === 'node') return undefined;
  if (execArgv.some((a) => a.startsWith(FLAG)) || (env['NODE_OPTIONS'] ?? '').includes(FLAG))
    return undefined;
  const mb = chosen === undefined || chosen === '' ? DEFAULT_SEMI_SPACE_MB : Number(chosen);
  if (!Number.isInteger(mb) || mb < 1 || mb > 1024)
    throw new Error(
      `TIDEMARK_SEMI_SPACE_MB must be a whole number of MB from 1 to 1024, or "node" for Node's own default; got "${chosen}"`,
    );
  return [`${FLAG}=${mb}`];
}
