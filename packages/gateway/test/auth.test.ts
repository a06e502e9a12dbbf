import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { jwtAuthenticator, tokenFileAuthenticator, type GatewayOptions } from '@tidemark/gateway';
import { currentExecution, defineToolModule } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { initializeRequest, MCP_HEADERS, MODERN_META, readSse } from '@tidemark/fixtures/sse';

// The gateway's two authenticators, on both lanes, and the subject reaching the tool.

const whoami = defineToolModule({
  name: 'whoami',
  register(server) {
    server.registerTool('whoami', { description: 'The caller’s subject.' }, () => ({
      content: [{ type: 'text', text: currentExecution()?.subject ?? '(none)' }],
    }));
    // The same subject, as the SDK hands it to every handler (no token: it never enters the log).
    server.registerTool('authinfo', { description: 'The SDK’s authInfo.' }, (ctx) => ({
      content: [{ type: 'text', text: JSON.stringify(ctx.http?.authInfo ?? null) }],
    }));
  },
});

async function setup(gateway: Partial<GatewayOptions>) {
  const stack = await embeddedStack({ partitions: 1, modules: [whoami], gateway });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!.url;
}

const INIT = initializeRequest();

const MODERN_CALL = {
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: {
    name: 'whoami',
    arguments: {},
    _meta: MODERN_META,
  },
};

function post(url: string, body: unknown, token?: string, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      ...MCP_HEADERS,
      ...headers,
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
}

/** The final JSON-RPC message of a response, SSE or JSON. */
async function finalOf(response: Response): Promise<Record<string, unknown>> {
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream'))
    return (await response.json()) as Record<string, unknown>;
  let final: Record<string, unknown> = {};
  await readSse(response, (event) => {
    if (event.data === '') return;
    final = JSON.parse(event.data) as Record<string, unknown>;
    if ('result' in final || 'error' in final) return false;
  });
  return final;
}

/** initialize, then tools/call whoami in that session; the text the tool answered. */
async function legacyWhoami(url: string, token: string): Promise<string> {
  const init = await post(url, INIT, token);
  expect(init.status).toBe(200);
  const session = init.headers.get('mcp-session-id')!;
  await finalOf(init);
  const headers = { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
  const call = await post(
    url,
    { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'whoami', arguments: {} } },
    token,
    headers,
  );
  const final = (await finalOf(call)) as { result?: { content: Array<{ text: string }> } };
  return final.result!.content[0]!.text;
}

describe('authentication', () => {
  it('a tokens file: no or unknown token → 401 on both lanes; a known one reaches the tool as its subject', async () => {
    const url = await setup({
      authenticate: tokenFileAuthenticator(
        '# token subject\nalice-token-0123456789 alice\n\nbob-token-0123456789abc bob\n',
      ),
    });
    for (const token of [undefined, 'wrong-token-0123456789']) {
      expect((await post(url, INIT, token)).status).toBe(401);
      expect(
        (await post(url, MODERN_CALL, token, { 'MCP-Protocol-Version': '2026-07-28' })).status,
      ).toBe(401);
    }
    expect(await legacyWhoami(url, 'alice-token-0123456789')).toBe('alice');
    expect(await legacyWhoami(url, 'bob-token-0123456789abc')).toBe('bob');
    const modern = await post(url, MODERN_CALL, 'alice-token-0123456789', {
      'MCP-Protocol-Version': '2026-07-28',
    });
    expect(modern.status).toBe(200);
    expect(await finalOf(modern)).toMatchObject({
      id: 1,
      result: { content: [{ type: 'text', text: 'alice' }] },
    });
  });

  it("the subject reaches tools as the SDK's authInfo too, on both lanes, without the token", async () => {
    const url = await setup({
      authenticate: tokenFileAuthenticator('carol-token-0123456789 carol\n'),
    });
    const expected = { token: '', clientId: '', scopes: [], extra: { subject: 'carol' } };
    const modern = await post(
      url,
      { ...MODERN_CALL, params: { ...MODERN_CALL.params, name: 'authinfo' } },
      'carol-token-0123456789',
      { 'MCP-Protocol-Version': '2026-07-28' },
    );
    const modernText = ((await finalOf(modern)) as { result: { content: Array<{ text: string }> } })
      .result.content[0]!.text;
    expect(JSON.parse(modernText)).toEqual(expected);
    const init = await post(url, INIT, 'carol-token-0123456789');
    const session = init.headers.get('mcp-session-id')!;
    await finalOf(init);
    const headers = { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' };
    const call = await post(
      url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'authinfo', arguments: {} } },
      'carol-token-0123456789',
      headers,
    );
    const text = ((await finalOf(call)) as { result: { content: Array<{ text: string }> } }).result
      .content[0]!.text;
    expect(JSON.parse(text)).toEqual(expected);
  });

  it('refuses a tokens file with a short token or a missing subject, naming the line', () => {
    expect(() => tokenFileAuthenticator('short alice\n')).toThrow(/tokens line 1/);
    expect(() => tokenFileAuthenticator('only-a-token-0123456789\n')).toThrow(/tokens line 1/);
    expect(() => tokenFileAuthenticator('# nothing\n')).toThrow(/at least one/);
  });

  it('never echoes a token: a bad line, a token given twice, a short one are named by line only', () => {
    const secret = 'SECRET-abcdefgh-0123456789-very-long';
    for (const text of [
      `${secret} alice extra\n`,
      `${secret} alice\n${secret} bob\n`,
      `${secret}\n`,
    ]) {
      let message = '';
      try {
        tokenFileAuthenticator(text);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/tokens line \d/);
      expect(message).not.toContain(secret.slice(0, 6));
    }
    expect(() => tokenFileAuthenticator(`${secret} alice\n${secret} bob\n`)).toThrow(
      /same token as line 1/,
    );
    const weak: number[] = [];
    tokenFileAuthenticator(`# a comment\n${secret} alice\nshort-but-16-chars bob\n`, {
      onWeakToken: (line) => weak.push(line),
    });
    expect(weak).toEqual([3]);
  });

  it('JWTs: a token without exp, or of a typ that is not an access token, is refused; JWKS over http:// only on loopback', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const issuer = 'https://issuer.example';
    const audience = 'https://mcp.example/mcp';
    const url = await setup({
      authenticate: jwtAuthenticator({ jwks: { keys: [jwk] }, issuer, audience }),
    });
    const token = (typ: string | undefined, exp: boolean) => {
      const jwt = new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k1', ...(typ === undefined ? {} : { typ }) })
        .setSubject('carol')
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt();
      return (exp ? jwt.setExpirationTime('5m') : jwt).sign(privateKey);
    };
    for (const bad of [await token(undefined, false), await token('logout+jwt', true)])
      expect((await post(url, INIT, bad)).status).toBe(401);
    for (const good of [await token('at+jwt', true), await token(undefined, true)])
      expect(await legacyWhoami(url, good)).toBe('carol');
    expect(() =>
      jwtAuthenticator({ jwks: new URL('http://issuer.example/jwks'), issuer, audience }),
    ).toThrow(/https:\/\//);
    expect(() =>
      jwtAuthenticator({ jwks: new URL('http://127.0.0.1:9/jwks'), issuer, audience }),
    ).not.toThrow();
  });

  it('OAuth 2.1 JWTs: signature, issuer, audience and expiry checked; 401 names the resource metadata, which is served', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const issuer = 'https://issuer.example';
    const audience = 'https://mcp.example/mcp';
    const url = await setup({
      authenticate: jwtAuthenticator({ jwks: { keys: [jwk] }, issuer, audience }),
      resourceMetadata: { resource: audience, authorizationServers: [issuer] },
    });
    const sign = (claims: {
      iss?: string;
      aud?: string;
      exp?: string;
      key?: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
    }) =>
      new SignJWT({ scope: 'tools' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setSubject('carol')
        .setIssuer(claims.iss ?? issuer)
        .setAudience(claims.aud ?? audience)
        .setIssuedAt()
        .setExpirationTime(claims.exp ?? '5m')
        .sign(claims.key ?? privateKey);
    const other = await generateKeyPair('ES256');
    for (const bad of [
      await sign({ iss: 'https://evil.example' }),
      await sign({ aud: 'https://elsewhere.example/mcp' }),
      await sign({ exp: '-1m' }),
      await sign({ key: other.privateKey }),
      'not.a.jwt',
    ]) {
      const denied = await post(url, INIT, bad);
      expect(denied.status).toBe(401);
      expect(denied.headers.get('www-authenticate')).toBe(
        'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"',
      );
    }
    expect(await legacyWhoami(url, await sign({}))).toBe('carol');
    const origin = new URL(url).origin;
    const metadata = await fetch(`${origin}/.well-known/oauth-protected-resource/mcp`);
    expect(await metadata.json()).toEqual({
      resource: audience,
      authorization_servers: [issuer],
      bearer_methods_supported: ['header'],
    });
  });
});
