import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'shell-quote';
import { messageOf } from '@tidemark/protocol';
import {
  hostedServerModule,
  hostedServerSpecs,
  type HostedServerModule,
  type HostedServerSpec,
} from '@tidemark/worker';
import { positiveInt, str, UsageError, type FlagValues } from '../options.js';

// `--mcp-server '<name>=<command line>'` (repeatable): stdio MCP servers in any language the
// worker hosts, their tools served as its own (issue #60). The command line is split as a shell
// splits words — quotes and escapes — and run without a shell: no pipes, no globs, no variables.
// `'<name>=https://…'` names a Streamable HTTP server running elsewhere instead.

export const MCP_SERVER_FLAGS = {
  'mcp-server': { type: 'string', multiple: true },
  'mcp-servers-file': { type: 'string' },
  'mcp-server-processes': { type: 'string' },
  'mcp-server-prefix': { type: 'boolean' },
  'allow-loopback-mcp-servers': { type: 'boolean' },
} as const;

const NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/**
 * The hosted servers the flags name: `--mcp-server` ones, then a servers file's (a JSON array of
 * `{ name, command, args, env, cwd, processes, prefix }`, the chart's `worker.mcpServers`).
 */
export function hostedServersOf(values: FlagValues, cwd: string): HostedServerSpec[] {
  const file = str(values['mcp-servers-file']);
  const listed = file === undefined ? [] : serversFile(resolve(cwd, file));
  // http to loopback (a server beside the worker, in development) only when asked for.
  const loopback = values['allow-loopback-mcp-servers'] === true ? { allowLoopback: true } : {};
  return hostedServerSpecs(
    [...fromFlags(values), ...listed].map((spec) =>
      typeof spec === 'object' && spec !== null && 'url' in spec ? { ...spec, ...loopback } : spec,
    ),
  );
}

/** The hosted servers' tool modules, and the end of their processes (after the worker's). */
export function hostedModules(
  values: FlagValues,
  cwd: string,
): { modules: HostedServerModule[]; close(): Promise<void> } {
  const modules = hostedServersOf(values, cwd).map(hostedServerModule);
  return {
    modules,
    close: async () => {
      for (const module of modules) await module.close();
    },
  };
}

function serversFile(path: string): unknown[] {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`--mcp-servers-file: ${path}: ${messageOf(error)}`);
  }
  if (!Array.isArray(value))
    throw new UsageError(`--mcp-servers-file: ${path}: expected a JSON array of servers`);
  return value;
}

function fromFlags(values: FlagValues): HostedServerSpec[] {
  const given = values['mcp-server'];
  const specs = Array.isArray(given) ? given : typeof given === 'string' ? [given] : [];
  const processes = positiveInt(str(values['mcp-server-processes']), '--mcp-server-processes', 2);
  const prefix = values['mcp-server-prefix'] === true;
  const servers = specs.map((spec) => {
    const at = spec.indexOf('=');
    const name = at < 0 ? '' : spec.slice(0, at);
    if (!NAME.test(name))
      throw new UsageError(
        `--mcp-server: expected <name>=<command line> with a name of letters, digits, _ and - (starting with a letter), got "${spec}"`,
      );
    const line = spec.slice(at + 1).trim();
    if (/^https?:\/\//i.test(line)) return { name, url: line, processes, prefix };
    // `$VAR` stays as written: nothing is expanded (the server's env is given as env).
    const words = parse(spec.slice(at + 1), (variable) => `$${variable}`);
    if (words.some((word) => typeof word !== 'string'))
      throw new UsageError(
        `--mcp-server ${name}: the command line is run without a shell: no pipes, redirections, globs or comments (got "${spec.slice(at + 1)}")`,
      );
    const [command, ...args] = words as string[];
    if (command === undefined) throw new UsageError(`--mcp-server ${name}: no command given`);
    return { name, command, args, processes, prefix };
  });
  return servers;
}
