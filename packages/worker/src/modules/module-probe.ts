import { ErrorCodes, messageOf, TidemarkError } from '@tidemark/protocol';
import { registerModule } from '../execution/index.js';
import type { ToolModule } from '@tidemark/tools';
import type { McpServer } from '@modelcontextprotocol/server';
import { createToolServer, type ServerIdentity } from '../execution/index.js';

/**
 * Runs every module's `register` against one probe server, as each session will, before anything
 * is served: a module that throws (a missing API key), or registers a tool, resource or prompt
 * name another module already has, fails with `TIDEMARK_TOOL_MODULE` naming it and saying why —
 * at startup, instead of every client's connect failing later.
 */
export async function probeToolModules(
  modules: readonly ToolModule[],
  identity: ServerIdentity,
): Promise<ModuleListing[]> {
  const server = createToolServer(identity, modules);
  const host = { execution: () => undefined, retry: () => Promise.resolve() };
  const listings: ModuleListing[] = [];
  // Which module registered each tool: a clash names both (two hosted servers, a module and one).
  const owners = new Map<string, string>();
  try {
    for (const module of modules) {
      const events = (module.events ?? []).map((type) => type.name);
      const listing = { name: module.name, tools: [] as string[], others: 0, events };
      try {
        const source = module.source ?? module.name;
        await registerModule(notingServer(server, listing, owners, source), module, host, {
          sessionId: PROBE_SESSION,
        });
        listings.push(listing);
      } catch (error) {
        throw new TidemarkError(
          ErrorCodes.toolModule,
          `tool module ${module.source ?? module.name}: register failed: ${messageOf(error)}`,
          { cause: error },
        );
      }
    }
  } finally {
    await server.close().catch(() => undefined);
  }
  return listings;
}

/** What one module registered: its tools by name, and how many resources and prompts. */
export interface ModuleListing {
  readonly name: string;
  readonly tools: readonly string[];
  readonly others: number;
  /** The event types it offers (the Events extension). */
  readonly events: readonly string[];
}

/** The probe server as a module sees it, noting what the module registers on it. */
function notingServer(
  server: McpServer,
  listing: { tools: string[]; others: number },
  owners: Map<string, string>,
  source: string,
): McpServer {
  const noting = Object.create(server) as McpServer;
  const note =
    <K extends 'registerTool' | 'registerResource' | 'registerPrompt'>(method: K) =>
    (...args: unknown[]): unknown => {
      if (method === 'registerTool') {
        const tool = String(args[0]);
        const first = owners.get(tool);
        if (first !== undefined) {
          const hosted = [first, source].some((s) => s.startsWith('--mcp-server'));
          const hint = hosted
            ? " (--mcp-server-prefix serves a hosted server's as <name>_<tool>)"
            : '';
          throw new Error(`its tool ${tool} is also ${first}'s${hint}`);
        }
        owners.set(tool, source);
        listing.tools.push(tool);
      } else listing.others++;
      return (server[method] as (...a: unknown[]) => unknown).apply(server, args);
    };
  Object.assign(noting, {
    registerTool: note('registerTool'),
    registerResource: note('registerResource'),
    registerPrompt: note('registerPrompt'),
  });
  return noting;
}

/** The session id a module's `register` sees during the startup probe. */
const PROBE_SESSION = 'tidemark-startup-probe';
