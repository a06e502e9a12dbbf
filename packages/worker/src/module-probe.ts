import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { registerModule } from './retries.js';
import { messageOf, type ToolModule } from './tool-module.js';
import { createToolServer, type ServerIdentity } from './tool-server.js';

/**
 * Runs every module's `register` against one probe server, as each session will, before anything
 * is served: a module that throws (a missing API key), or registers a tool, resource or prompt
 * name another module already has, fails with `TIDEMARK_TOOL_MODULE` naming it and saying why —
 * at startup, instead of every client's connect failing later.
 */
export async function probeToolModules(
  modules: readonly ToolModule[],
  identity: ServerIdentity,
): Promise<void> {
  const server = createToolServer(identity, modules);
  const host = { execution: () => undefined, retry: () => Promise.resolve() };
  try {
    for (const module of modules) {
      try {
        await registerModule(server, module, host, { sessionId: PROBE_SESSION });
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
}

/** The session id a module's `register` sees during the startup probe. */
const PROBE_SESSION = 'tidemark-startup-probe';
