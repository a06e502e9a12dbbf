import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors, type InteractionResults } from 'oidc-provider';

// A real OAuth 2.1 / OpenID authorization server for the sign-in tests: `oidc-provider` (a
// certified OpenID provider), on loopback, with what the MCP authorization flow uses — dynamic
// client registration, PKCE, resource indicators (RFC 8707) issuing JWT access tokens for one
// resource, refresh tokens. The person signing in is `accountId`: the interaction pages log them in
// and grant the client the scopes it asked for among `scopes`, at once.

export interface AuthorizationServerOptions {
  /** The protected resource (the MCP endpoint's URL) tokens are issued for: their `aud`. */
  readonly resource: string;
  /** The resource's scopes a client may be granted. */
  readonly scopes: readonly string[];
  /** Who signs in. */
  readonly accountId: string;
  /** Access token lifetime, seconds. */
  readonly accessTokenTtlSec: number;
}

export interface AuthorizationServer {
  readonly issuer: string;
  readonly jwksUrl: URL;
  /** Access tokens issued so far (their JWTs), in order. */
  readonly issued: string[];
  /** Signs with the next key (`signing-2`); the one before is gone from the JWKS: revoked. */
  rotate(): void;
  stop(): Promise<void>;
}

export async function startAuthorizationServer(
  options: AuthorizationServerOptions,
): Promise<AuthorizationServer> {
  // The server first (the issuer is its address), then the provider it serves.
  const handler: { provider?: Provider; keys?: SigningKeys } = {};
  const http = createServer((req, res) => {
    const { provider, keys } = handler;
    if (provider === undefined || keys === undefined) return void res.writeHead(503).end();
    // The keys it publishes: the one it signs with now (a revoked one is gone).
    if (req.url === '/jwks')
      return void res
        .writeHead(200, { 'content-type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: [keys.published[keys.active]] }));
    if (req.url?.startsWith('/interaction/') === true)
      return void signIn(provider, options.accountId, req, res);
    void provider.callback()(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const issued: string[] = [];
  const keys = await signingKeys(2);
  handler.keys = keys;
  handler.provider = provide(issuer, options, issued, keys);
  return {
    issuer,
    jwksUrl: new URL(`${issuer}/jwks`),
    issued,
    rotate: () => {
      keys.active++;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/**
 * The sign-in and consent pages, as a person who is sure: logged in as `accountId`, and every
 * scope the client asked for (among the server's) granted at once.
 */
async function signIn(
  provider: Provider,
  accountId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const { prompt, params, grantId } = await provider.interactionDetails(req, res);
    let result: InteractionResults;
    if (prompt.name === 'login') result = { login: { accountId } };
    else {
      const grant =
        grantId === undefined
          ? new provider.Grant({ accountId, clientId: String(params['client_id']) })
          : await provider.Grant.find(grantId);
      const missing = prompt.details as {
        missingOIDCScope?: string[];
        missingResourceScopes?: Record<string, string[]>;
      };
      if (missing.missingOIDCScope) grant!.addOIDCScope(missing.missingOIDCScope.join(' '));
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
        grant!.addResourceScope(indicator, scopes.join(' '));
      result = { consent: { grantId: await grant!.save() } };
    }
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
  } catch (error) {
    res.writeHead(400).end(String(error));
  }
}

/** The keys a server signs with, in turn (`signing-<n>`): private, and as published. */
interface SigningKeys {
  readonly private: JWK[];
  readonly published: JWK[];
  /** The index of the one in use. */
  active: number;
}

async function signingKeys(count: number): Promise<SigningKeys> {
  const keys = { private: [] as JWK[], published: [] as JWK[], active: 0 };
  for (let n = 1; n <= count; n++) {
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const named = { kid: `signing-${n}`, alg: 'ES256', use: 'sig' };
    keys.private.push({ ...(await exportJWK(privateKey)), ...named });
    keys.published.push({ ...(await exportJWK(publicKey)), ...named });
  }
  return keys;
}

/** The provider, signing access tokens with the active key. */
function provide(
  issuer: string,
  options: AuthorizationServerOptions,
  issued: string[],
  keys: SigningKeys,
): Provider {
  const provider = new Provider(issuer, {
    jwks: { keys: keys.private },
    // Its keys are ES256 keys: what it signs with unless a client asks otherwise.
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    scopes: ['openid', 'offline_access', ...options.scopes],
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== options.resource) throw new errors.InvalidTarget();
          return {
            scope: options.scopes.join(' '),
            audience: options.resource,
            accessTokenTTL: options.accessTokenTtlSec,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256', kid: keys.private[keys.active]!.kid! } },
          };
        },
      },
    },
    pkce: { required: () => true },
    ttl: {
      Interaction: 60,
      Session: 600,
      Grant: 600,
      AccessToken: options.accessTokenTtlSec,
      RefreshToken: 600,
      AuthorizationCode: 60,
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    // Public clients (PKCE, no secret) get refresh tokens too: what an MCP client keeps.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    clientBasedCORS: () => true,
  });
  provider.on('server_error', (_ctx: unknown, error: Error) => {
    throw error;
  });
  // The JWTs the token endpoint answers, seen as the client does.
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as { access_token?: unknown } | undefined;
    if (ctx.path === '/token' && typeof body?.access_token === 'string')
      issued.push(body.access_token);
  });
  return provider;
}
