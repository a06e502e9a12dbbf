import type {
  AuthInfo,
  JSONRPCRequest,
  ScopeChallenge,
  ScopeChallengeHandler,
} from '@modelcontextprotocol/server';
import { requireScopes } from '@modelcontextprotocol/server';
import { JsonRpcErrorCodes } from '@tidemark/protocol';
import type { ToolModule } from '@tidemark/tools';

// A tool's required scopes, checked on the worker before it runs. A tool says what it needs the
// SDK's way (`registerTool(name, { scopeChallenge: requireScopes('files:write') }, …)`) or the
// module's (`requiredScopes`, `toolScopes`); both end up as the SDK's `scopeChallenge`, and the
// server hands their resolver to its transport, which asks it before it hands a request over.
//
// The SDK's HTTP transport answers a challenge with 403 and `WWW-Authenticate: Bearer
// error="insufficient_scope"`. Here the gateway has answered the request's HTTP already (its
// stream is open before the worker reads the request), so the refusal is the call's JSON-RPC
// error, carrying the same challenge in `data` for a client to step up by.

/** The JSON-RPC error of a call its credential lacks scopes for: the challenge in `data`. */
export interface InsufficientScopeError {
  readonly code: number;
  readonly message: string;
  readonly data: { readonly error: 'insufficient_scope'; readonly scope: string };
}

function insufficientScope(challenge: ScopeChallenge): InsufficientScopeError {
  const scope = challenge.scopes.join(' ');
  return {
    code: JsonRpcErrorCodes.forbidden,
    message: `Forbidden: insufficient_scope: this call needs the scope(s) ${scope}${
      challenge.errorDescription === undefined ? '' : ` (${challenge.errorDescription})`
    }; sign in again granting them`,
    data: { error: 'insufficient_scope', scope },
  };
}

/**
 * The refusal of `request` by its tool's (or resource's, or prompt's) scope challenge, or
 * undefined when it may run — also when nothing is authenticated (no `authInfo`): without
 * authentication anyone may call every tool, as the gateway's `--auth none` says.
 */
export async function scopeRefusal(
  resolve: ScopeChallengeHandler | undefined,
  request: JSONRPCRequest,
  authInfo: AuthInfo | undefined,
): Promise<InsufficientScopeError | undefined> {
  if (resolve === undefined || authInfo === undefined) return undefined;
  const challenge = await resolve({ request, authInfo });
  return challenge === undefined ? undefined : insufficientScope(challenge);
}

/**
 * The scope challenge of a tool `module` registers: its own (the SDK's `scopeChallenge`), then the
 * module's `toolScopes[tool]` (else `requiredScopes`) — the first that refuses.
 */
export function toolScopeChallenge(
  module: ToolModule,
  tool: string,
  own: ScopeChallengeHandler | undefined,
): ScopeChallengeHandler | undefined {
  const scopes = module.toolScopes?.[tool] ?? module.requiredScopes;
  const declared =
    scopes === undefined || scopes.length === 0
      ? undefined
      : requireScopes(...(scopes as [string, ...string[]]));
  if (declared === undefined || own === undefined) return declared ?? own;
  return async (context) => (await declared(context)) ?? (await own(context));
}
