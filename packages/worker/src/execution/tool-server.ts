import { McpServer, type AuthInfo, type ServerOptions } from '@modelcontextprotocol/server';
import { SESSION_PROTOCOL_VERSIONS, TASKS_EXTENSION, type Caller } from '@tidemark/protocol';
import type { ToolModule } from '@tidemark/tools';

/**
 * The revisions a session's server answers `initialize` with, newest first: the SDK answers a
 * revision it does not serve with the first, as the gateway agreed (`agreedSessionVersion`).
 */
export const SESSION_SERVER_VERSIONS: readonly string[] = [...SESSION_PROTOCOL_VERSIONS].reverse();

/** What a deployment's MCP server says of itself in `initialize` (and `server/discover`). */
export interface ServerIdentity {
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** The deployment's `instructions`; each module's own are added after them. */
  readonly instructions?: string | undefined;
}

/**
 * The SDK's `McpServer` every module registers on — for a session, a stateless request, or the
 * startup probe: the deployment's identity, logging, and the modules' instructions.
 */
export function createToolServer(
  identity: ServerIdentity,
  modules: readonly ToolModule[],
  options: Omit<ServerOptions, 'capabilities' | 'instructions'> = {},
  /** Whether the server offers the Tasks extension (in `server/discover`). */
  tasks = false,
): McpServer {
  const parts = [identity.instructions, ...modules.map((module) => module.instructions)];
  const instructions = parts.filter((part) => part !== undefined && part !== '').join('\n\n');
  return new McpServer(
    { name: identity.serverInfo.name, version: identity.serverInfo.version },
    {
      ...options,
      capabilities: { logging: {}, ...(tasks ? { extensions: { [TASKS_EXTENSION]: {} } } : {}) },
      ...(instructions === '' ? {} : { instructions }),
    },
  );
}

/**
 * The SDK's `authInfo` for a call whose gateway authenticated `subject`: the subject in
 * `extra.subject` (also `currentExecution().subject`), the credential's OAuth client and scopes
 * as its request's record carries them (what `scopeChallenge` and `requiredScopes` are checked
 * against). The bearer token never enters the log, so `token` is empty.
 */
export function authInfoOf(
  subject: string | undefined,
  caller: Caller | undefined = undefined,
): AuthInfo | undefined {
  if (subject === undefined) return undefined;
  return {
    token: '',
    clientId: caller?.clientId ?? '',
    scopes: [...(caller?.scopes ?? [])],
    extra: { subject },
  };
}
