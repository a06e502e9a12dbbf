// Sign-in the way clients do it: the MCP authorization flow end to end, with a real authorization
// server (oidc-provider) and the official TypeScript client's OAuth support, unmodified — through
// one ingress (a TCP proxy round-robin over two gateways) on the real broker.
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientProvider,
} from '@modelcontextprotocol/client';
import { KafkaLog } from '@tidemark/kafka';
import { jwtAuthenticator } from '@tidemark/gateway';
import { currentExecution, defineToolModule } from '@tidemark/worker';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { expect, inject, it, onTestFinished } from 'vitest';
import { EXIT } from '@tidemark/cli';
import type { AuditRecord } from '@tidemark/protocol';
import { startLogStack } from '@tidemark/fixtures/log-stack';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';
import { provisionTestTopics } from '@tidemark/fixtures/topics';
import { initializeRequest, MCP_HEADERS, readSse } from '@tidemark/fixtures/sse';
import counting from '@tidemark/examples/counting';
import {
  startAuthorizationServer,
  type AuthorizationServer,
} from '../support/authorization-server.js';
import { pythonWithMcp } from '../support/prerequisites.js';
import { runTidemark } from '../support/cli.js';

const run = promisify(execFile);

const files = defineToolModule({
  name: 'files',
  requiredScopes: ['files:read'],
  toolScopes: { write: ['files:read', 'files:write'] },
  register(server) {
    server.registerTool('whoami', { description: 'Who calls.' }, () => {
      const { subject, clientId, scopes } = currentExecution() ?? {};
      return { content: [{ type: 'text', text: JSON.stringify({ subject, clientId, scopes }) }] };
    });
    server.registerTool('write', { description: 'Writes.' }, () => ({
      content: [{ type: 'text', text: 'written' }],
    }));
  },
});

const REDIRECT = 'http://127.0.0.1:1/callback';

/** The client's side of OAuth, kept in memory, as an app keeps it; the browser is `visit`. */
class MemoryOAuth implements OAuthClientProvider {
  client: Awaited<ReturnType<NonNullable<OAuthClientProvider['clientInformation']>>>;
  stored: Awaited<ReturnType<OAuthClientProvider['tokens']>>;
  verifier = '';
  authorizationUrl: URL | undefined;

  constructor(private readonly scope: string) {}

  get redirectUrl() {
    return REDIRECT;
  }

  get clientMetadata() {
    return {
      client_name: 'tidemark-oauth-test',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: this.scope,
    };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(info: NonNullable<MemoryOAuth['client']>) {
    this.client = info;
  }

  tokens() {
    return this.stored;
  }

  saveTokens(tokens: NonNullable<MemoryOAuth['stored']>) {
    this.stored = tokens;
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }

  // Which authorization server the sign-in began with: the callback is checked against it.
  discovered: unknown;

  saveDiscoveryState(state: unknown) {
    this.discovered = state;
  }

  discoveryState() {
    return this.discovered as never;
  }
}

/**
 * The browser: follows the authorization URL's redirects (keeping the server's cookies), signs
 * in, and returns what the redirect back to the client carries (the code, the issuer).
 */
async function visit(url: URL): Promise<URLSearchParams> {
  const cookies = new Map<string, string>();
  let next = url.href;
  for (let hop = 0; hop < 10; hop++) {
    const response = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (location === null)
      throw new Error(`${response.status} at ${next}: ${await response.text()}`);
    next = new URL(location, next).href;
    if (next.startsWith(REDIRECT)) return new URL(next).searchParams;
  }
  throw new Error('too many redirects');
}

/** Connects with OAuth: the first attempt signs in (discovery, registration, PKCE), the next is authorized. */
async function signedIn(resource: string, oauth: MemoryOAuth): Promise<Client> {
  const first = new StreamableHTTPClientTransport(new URL(resource), { authProvider: oauth });
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(first).catch((e: unknown) => {
    if (!(e instanceof UnauthorizedError)) throw e;
  });
  await first.finishAuth(await visit(oauth.authorizationUrl!));
  const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider: oauth });
  const authorized = new Client({ name: 'oauth-test', version: '1.0.0' });
  await authorized.connect(transport);
  onTestFinished(() => authorized.close());
  return authorized;
}

const textOf = (result: { content?: unknown }) =>
  (result.content as Array<{ text: string }>)[0]!.text;

it('the MCP authorization flow with a real authorization server and the official TypeScript client: discovery, registration, PKCE, a token for the resource, calls through two gateways, refresh, scopes, a resume after the token expired', async (ctx) => {
  const brokers = inject('kafkaBrokers');
  const { names } = await provisionTestTopics(ctx, brokers, { label: 'oauth', partitions: 2 });
  // The ingress: one public URL over both gateways, as a Service in front of them.
  const ingress = await TcpProxy.start(0);
  onTestFinished(() => ingress.close());
  const resource = `http://127.0.0.1:${ingress.port}/mcp`;
  const as = await startAuthorizationServer({
    resource,
    scopes: ['files:read', 'files:write'],
    accountId: 'carol',
    accessTokenTtlSec: 4,
  });
  onTestFinished(() => as.stop());
  const stack = await startLogStack(
    new KafkaLog({ brokers: [...brokers] }),
    names,
    [files, counting],
    {},
    {
      authenticate: jwtAuthenticator({
        jwks: as.jwksUrl,
        issuer: as.issuer,
        audience: resource,
        clockToleranceSec: 0,
        // Keys are fetched again after a second: a revoked one is refused that soon.
        jwksMaxAgeSec: 1,
        jwksCooldownSec: 0,
      }),
      resourceMetadata: {
        resource,
        authorizationServers: [as.issuer],
        // What a client asks for when nothing asks for more: writing is a step up.
        scopesSupported: ['files:read'],
      },
    },
  );
  onTestFinished(() => stack.stop());
  ingress.pool = stack.urls.map((url) => Number(new URL(url).port));

  const oauth = new MemoryOAuth('files:read offline_access');
  const client = await signedIn(resource, oauth);
  // Registered dynamically, signed in with PKCE, for this resource and the scopes asked.
  const clientId = oauth.client?.client_id;
  expect(clientId).toEqual(expect.any(String));
  const claims = decodeJwt(as.issued.at(-1)!);
  expect(claims).toMatchObject({ aud: resource, sub: 'carol', client_id: clientId });
  expect(String(claims['scope']).split(' ')).toContain('files:read');
  expect(oauth.stored?.refresh_token).toEqual(expect.any(String));

  // Calls, spread over both gateways by the ingress: the tool sees who, which client, what scopes.
  for (let i = 0; i < 4; i++) {
    ingress.cut(); // the next request comes in on a new connection: the other gateway
    expect(JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })))).toEqual({
      subject: 'carol',
      clientId,
      scopes: expect.arrayContaining(['files:read']) as unknown,
    });
  }
  // A tool needing a scope the token lacks: refused before it runs, naming the scope.
  await expect(client.callTool({ name: 'write', arguments: {} })).rejects.toThrow(
    /insufficient_scope: this call needs the scope\(s\) files:read files:write/,
  );

  // The access token expires: the gateway answers 401, the client refreshes and goes on.
  const before = as.issued.length;
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  expect(textOf(await client.callTool({ name: 'whoami', arguments: {} }))).toContain('carol');
  expect(as.issued.length).toBeGreaterThan(before);
  await client.close();

  // A 401 names where to sign in, and the scopes to ask for.
  const anonymous = await fetch(resource, {
    method: 'POST',
    headers: MCP_HEADERS,
    body: JSON.stringify(initializeRequest()),
  });
  expect(anonymous.status).toBe(401);
  expect(anonymous.headers.get('www-authenticate')).toBe(
    `Bearer resource_metadata="http://127.0.0.1:${ingress.port}/.well-known/oauth-protected-resource/mcp", scope="files:read"`,
  );
  await resumedAfterExpiry(resource, oauth, as.issuer);
  await keyRotationPickedUp(resource, oauth, as);
  await officialPythonClient(resource);
  await auditTrailExported(brokers, names.audit.slice(0, -'audit'.length), clientId!);
});

/**
 * `tidemark audit --since 1h --format jsonl`: one line per call of the flows above, each naming
 * the subject, the OAuth client and the scopes of its token, with the outcome — the refused
 * writes with why.
 */
async function auditTrailExported(brokers: readonly string[], prefix: string, clientId: string) {
  const args = ['audit', '--since', '1h', '--format', 'jsonl', '--brokers', brokers.join(',')];
  const { code, out } = await runTidemark([...args, '--prefix', prefix]);
  expect(code, out.join('\n')).toBe(EXIT.ok);
  const records = out.map((line) => JSON.parse(line) as AuditRecord);
  expect(new Set(records.map((r) => `${r.owner}/${r.stream}`)).size).toBe(records.length);
  for (const record of records) expect(record).toMatchObject({ subject: 'carol' });
  const ours = records.filter((r) => r.clientId === clientId);
  expect(ours.filter((r) => r.tool === 'whoami' && r.outcome === 'answered')).toHaveLength(5);
  expect(ours.filter((r) => r.tool === 'write')).toEqual([
    expect.objectContaining({
      outcome: 'refused',
      scopes: expect.arrayContaining(['files:read']) as unknown,
      reason: expect.stringContaining('insufficient_scope') as unknown,
    }),
  ]);
  // The Python client's, under a client of its own: three calls answered, one refused.
  const python = records.filter((r) => r.clientId !== clientId && r.tool !== 'count');
  expect(python.map((r) => r.outcome).sort()).toEqual([
    'answered',
    'answered',
    'answered',
    'refused',
  ]);
}

/** The official Python client's OAuth, the same flow from nothing: sign-in, calls, a scope refused, refresh. */
async function officialPythonClient(resource: string) {
  const { stdout } = await run(pythonWithMcp(), [
    join(import.meta.dirname, 'python', 'oauth_client.py'),
    resource,
    REDIRECT,
  ]).catch((error: { stdout?: string; message: string }) => {
    throw new Error(`the Python client failed: ${error.stdout ?? error.message}`);
  });
  const lines = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const clientId = lines.find((line) => 'client_id' in line)?.['client_id'];
  expect(clientId).toEqual(expect.any(String));
  const seen = lines.filter((line) => 'whoami' in line).map((line) => line['whoami']);
  expect(seen).toEqual(
    [1, 2, 3].map(() => ({ subject: 'carol', clientId, scopes: ['files:read'] })),
  );
  expect(lines).toContainEqual({
    refused: expect.stringContaining('insufficient_scope') as unknown,
  });
  // Signed in once, refreshed once the token expired.
  expect(lines.at(-1)).toEqual({ tokens: 2 });
}

/** A fresh access token for `resource`, from the refresh token (as the client's refresh does). */
async function refresh(resource: string, oauth: MemoryOAuth, issuer: string): Promise<string> {
  const refreshed = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: oauth.stored!.refresh_token!,
      client_id: oauth.client!.client_id,
      resource,
    }),
  });
  const tokens = (await refreshed.json()) as { access_token: string; refresh_token?: string };
  // A public client's refresh token is used once: the next refresh takes the new one.
  oauth.saveTokens({ ...oauth.stored!, ...tokens });
  return tokens.access_token;
}

/**
 * The authorization server replaces its signing key (the old one revoked, gone from its JWKS): a
 * token it signed with the old key is refused while it has not expired; one with the new key,
 * which no gateway has seen, is taken at once.
 */
async function keyRotationPickedUp(resource: string, oauth: MemoryOAuth, as: AuthorizationServer) {
  const call = (token: string) =>
    fetch(resource, {
      method: 'POST',
      headers: { ...MCP_HEADERS, Authorization: `Bearer ${token}` },
      body: JSON.stringify(initializeRequest()),
    }).then(async (response) => {
      await response.body?.cancel();
      return response.status;
    });
  const before = await refresh(resource, oauth, as.issuer);
  expect(await call(before)).toBe(200);
  as.rotate();
  await new Promise((resolve) => setTimeout(resolve, 1_200)); // the gateways' JWKS cache ages
  expect(decodeJwt(before).exp! * 1000).toBeGreaterThan(Date.now()); // not expired: revoked
  expect(await call(before)).toBe(401);
  const after = await refresh(resource, oauth, as.issuer);
  expect(decodeProtectedHeader(after).kid).toBe('signing-2');
  expect(await call(after)).toBe(200);
}

/**
 * A stream dropped mid-call and resumed after its token expired: the resume (GET with
 * Last-Event-ID) is refused 401 naming the metadata; with a refreshed token it is exact — every
 * progress the call made meanwhile, once, then its result.
 */
async function resumedAfterExpiry(resource: string, oauth: MemoryOAuth, issuer: string) {
  let token = oauth.stored!.access_token;
  const auth = () => ({ Authorization: `Bearer ${token}` });
  const init = await fetch(resource, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...auth() },
    body: JSON.stringify(initializeRequest()),
  });
  const session = {
    'Mcp-Session-Id': init.headers.get('mcp-session-id')!,
    'MCP-Protocol-Version': '2025-11-25',
  };
  await readSse(init, (event) => event.data === '');
  const headers = { ...MCP_HEADERS, ...session };
  const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
  await fetch(resource, {
    method: 'POST',
    headers: { ...headers, ...auth() },
    body: JSON.stringify(initialized),
  });
  const progress: number[] = [];
  let lastId: string | undefined;
  let result: unknown;
  const onEvent = (event: { id: string | undefined; data: string }) => {
    if (event.id !== undefined) lastId = event.id;
    if (event.data === '') return;
    const message = JSON.parse(event.data) as {
      method?: string;
      params?: { progress: number };
      result?: unknown;
    };
    if (message.method === 'notifications/progress') progress.push(message.params!.progress);
    if (message.result !== undefined) result = message.result;
    return result === undefined;
  };
  const controller = new AbortController();
  const call = {
    jsonrpc: '2.0',
    id: 5,
    method: 'tools/call',
    params: { name: 'count', arguments: { to: 8, delayMs: 700 }, _meta: { progressToken: 'p' } },
  };
  const started = await fetch(resource, {
    method: 'POST',
    headers: { ...headers, ...auth() },
    body: JSON.stringify(call),
    signal: controller.signal,
  });
  await readSse(started, (event) => onEvent(event) !== false && progress.length < 2, controller);
  // The client is away until its token has expired; the call goes on.
  const expiresAtMs = decodeJwt(token).exp! * 1000;
  await new Promise((resolve) => setTimeout(resolve, expiresAtMs - Date.now() + 1_000));
  const resume = () =>
    fetch(resource, {
      headers: { ...session, Accept: 'text/event-stream', 'Last-Event-ID': lastId!, ...auth() },
    });
  const refused = await resume();
  expect(refused.status).toBe(401);
  expect(refused.headers.get('www-authenticate')).toContain('resource_metadata=');
  // Refreshed at the token endpoint, as the client's refresh does (RFC 8707: for this resource).
  token = await refresh(resource, oauth, issuer);
  const resumed = await resume();
  expect(resumed.status).toBe(200);
  await readSse(resumed, onEvent);
  expect(progress).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  expect(result).toMatchObject({ content: [{ type: 'text' }] });
}
