import type { WorkerOptions } from '@tidemark/worker';
import { str, UsageError, type FlagValues } from '../options.js';

/** What the deployment's MCP server says of itself (`dev`, `worker`). */
export const SERVER_IDENTITY_FLAGS = {
  'server-name': { type: 'string' },
  'server-version': { type: 'string' },
  instructions: { type: 'string' },
} as const;

/** `serverInfo` and `instructions` from the flags; the worker's defaults where a flag is absent. */
export function serverIdentityOf(
  values: FlagValues,
  defaults: { name: string; version: string },
): Pick<WorkerOptions, 'serverInfo' | 'instructions'> {
  const name = str(values['server-name']);
  const version = str(values['server-version']);
  const instructions = str(values['instructions']);
  for (const [flag, value] of [
    ['--server-name', name],
    ['--server-version', version],
  ] as const)
    if (value !== undefined && value.trim() === '')
      throw new UsageError(`${flag}: expected a non-empty value`);
  return {
    ...(name === undefined && version === undefined
      ? {}
      : { serverInfo: { name: name ?? defaults.name, version: version ?? defaults.version } }),
    ...(instructions === undefined ? {} : { instructions }),
  };
}
