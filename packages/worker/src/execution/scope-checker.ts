import type { AuthInfo, JSONRPCRequest, McpServer } from '@modelcontextprotocol/server';
import type { ToolModule } from '@tidemark/tools';
import type { CallEnvironment } from './call-environment.js';
import { registerModule } from './retries.js';
import { scopeRefusal, type InsufficientScopeError } from './scope-challenge.js';
import { createToolServer } from './tool-server.js';

/**
 * Asks the tools' scope challenges where no server runs the request: a keyed 2026-07-28 call that
 * may be answered from the outcome of an earlier one with its idempotency key, which must not give
 * a caller without the scopes what its tool would have refused. One server with every module
 * registered, made at the first need and again when the modules change (`dev --watch`).
 */
export class ScopeChecker {
  private made: { modules: readonly ToolModule[]; server: Promise<McpServer> } | undefined;

  constructor(private readonly environment: CallEnvironment) {}

  async refusal(
    request: JSONRPCRequest,
    authInfo: AuthInfo | undefined,
  ): Promise<InsufficientScopeError | undefined> {
    if (authInfo === undefined) return undefined;
    const { modules } = this.environment;
    if (this.made?.modules !== modules) this.made = { modules, server: this.build(modules) };
    const server = await this.made.server;
    return scopeRefusal(server.resolveScopeChallenge, request, authInfo);
  }

  private async build(modules: readonly ToolModule[]): Promise<McpServer> {
    const server = createToolServer(this.environment, modules);
    // Registered only to be asked: its tools never run.
    const host = { execution: () => undefined, retry: () => Promise.resolve() };
    for (const module of modules)
      await registerModule(server, module, host, { sessionId: SCOPE_CHECK_SESSION });
    return server;
  }
}

const SCOPE_CHECK_SESSION = 'tidemark-scope-check';
