import { requireScopes } from '@modelcontextprotocol/server';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { jwtAuthenticator, type GatewayOptions } from '@tidemark/gateway';
import { AuditLog } from '@tidemark/log';
import { argumentsDigest } from '@tidemark/protocol';
import { currentExecution, defineToolModule } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { initializeRequest, MCP_HEADERS, MODERN_META, readSse } from '@tidemark/fixtures/sse';

// Scopes to tools: a tool's required scopes (the module's `requiredScopes`/`toolScopes`, or the
// SDK's `scopeChallenge`) checked on the worker against the scopes of the call's own token,
// before the tool runs, on both lanes; and the caller's client and scopes seen by the tool.

const ran: string[] = [];

const files = defineToolModule({
  name: 'files',
  requiredScopes: ['files:read'],
  toolScopes: { write: ['files:read', 'files:write'] },
  register(server) {
    server.registerTool('read', { description: 'Reads.' }, () => {
      ran.push('read');
      return { content: [{ type: 'text', text: 'read' }] };
    });
    server.registerTool('write', { description: 'Writes.' }, () => {
      ran.push('write');
      return { content: [{ type: 'text', text: 'written' }] };
    });
  },
});

const admin = defineToolModule({
  name: 'admin',
  register(server) {
    // The SDK's own way, as a module written for the SDK's HTTP transport says it.
    server.registerTool(
      'purge',
      { description: 'Purges.', scopeChallenge: requireScopes('admin') },
      () => {
        ran.push('purge');
        return { content: [{ type: 'text', text: 'purged' }] };
      },
    );
    server.registerTool('fail', { description: 'Fails.' }, () => {
      throw new Error('disk on fire');
    });
    server.registerTool('caller', { description: 'Who calls, with what.' }, (ctx) => {
      const execution = currentExecution();
      const { clientId, scopes } = execution ?? {};
      const auth = ctx.http?.authInfo;
      const seen = { clientId, scopes, sdk: { clientId: auth?.clientId, scopes: auth?.scopes } };
      return { content: [{ type: 'text', text: JSON.stringify(seen) }] };
    });
  },
});

const issuer = 'https://issuer.example';
const audience = 'https://mcp.example/mcp';

async function setup(gateway: (jwk: JWK) => Partial<GatewayOptions>) {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const stack = await embeddedStack({
    partitions: 1,
    modules: [files, admin],
    gateway: gateway(jwk),
  });
  onTestFinished(() => stack.stop());
  const token = (scope: string, claims: Record<string, string> = {}) =>
    new SignJWT({ scope, client_id: 'app-1', ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setSubject('carol')
      .setIssuer(issuer)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
  const trail = new AuditLog({ log: stack.log, topic: stack.topics.audit, partitionCount: 1 });
  return { url: stack.gateways[0]!.url, token, key: privateKey, trail };
}

const withJwt = (jwk: JWK) => ({
  authenticate: jwtAuthenticator({ jwks: { keys: [jwk] }, issuer, audience }),
});

function post(url: string, body: unknown, token: string | undefined, headers = {}) {
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

async function finalOf(response: Response): Promise<Record<string, unknown>> {
  expect(response.status).toBe(200);
  let final: Record<string, unknown> = {};
  await readSse(response, (event) => {
    if (event.data === '') return;
    final = JSON.parse(event.data) as Record<string, unknown>;
    if ('result' in final || 'error' in final) return false;
  });
  return final;
}

let ids = 10;
const callOf = (name: string) => ({
  jsonrpc: '2.0',
  id: ids++,
  method: 'tools/call',
  params: { name, arguments: {} },
});

/** A 2026-07-28 call (the stateless lane): its final message. */
async function modern(url: string, name: string, token?: string, headers = {}) {
  const call = callOf(name);
  const body = { ...call, params: { ...call.params, _meta: MODERN_META } };
  const revision = { 'MCP-Protocol-Version': '2026-07-28' };
  return finalOf(await post(url, body, token, { ...revision, ...headers }));
}

/** A session (the session lane); its calls, each with its own token. */
async function session(url: string, token?: string) {
  const init = await post(url, initializeRequest(), token);
  const id = init.headers.get('mcp-session-id')!;
  await finalOf(init);
  const headers = { 'Mcp-Session-Id': id, 'MCP-Protocol-Version': '2025-11-25' };
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
  return (name: string, as = token, more = {}) =>
    post(url, callOf(name), as, { ...headers, ...more }).then(finalOf);
}

const refused = (scope: string) => ({
  error: {
    code: -32003,
    message: expect.stringContaining(
      `insufficient_scope: this call needs the scope(s) ${scope}`,
    ) as unknown,
    data: { error: 'insufficient_scope', scope },
  },
});
const answered = (text: string) => ({ result: { content: [{ type: 'text', text }] } });

describe('scopes to tools', () => {
  it('a call without the scopes its tool needs is refused before the tool runs, on both lanes; with them it runs', async () => {
    const { url, token } = await setup(withJwt);
    const reader = await token('files:read');
    ran.length = 0;
    for (const call of [(name: string) => modern(url, name, reader), await session(url, reader)]) {
      expect(await call('read')).toMatchObject(answered('read'));
      expect(await call('write')).toMatchObject(refused('files:read files:write'));
      expect(await call('purge')).toMatchObject(refused('admin'));
    }
    expect(ran).toEqual(['read', 'read']);
    const writer = await token('files:read files:write admin');
    for (const call of [(name: string) => modern(url, name, writer), await session(url, writer)]) {
      expect(await call('write')).toMatchObject(answered('written'));
      expect(await call('purge')).toMatchObject(answered('purged'));
    }
    expect(ran).toEqual(['read', 'read', 'write', 'purge', 'write', 'purge']);
  });

  it('every call leaves one audit record: who, which tool, a digest of its arguments, its outcome and why, on both lanes', async () => {
    const { url, token, trail } = await setup(withJwt);
    const reader = await token('files:read');
    const sessionCall = await session(url, reader);
    for (const call of [(name: string) => modern(url, name, reader), sessionCall]) {
      for (const name of ['read', 'write', 'fail']) await call(name);
    }
    const records = await trail.read();
    const who = { subject: 'carol', clientId: 'app-1', scopes: ['files:read'] };
    const digest = argumentsDigest({});
    expect(records.map((r) => [r.tool, r.outcome])).toEqual(
      [0, 1].flatMap(() => [
        ['read', 'answered'],
        ['write', 'refused'],
        ['fail', 'error'],
      ]),
    );
    for (const record of records)
      expect(record).toMatchObject({ ...who, arguments: digest, executions: 1 });
    expect(records.filter((r) => r.outcome !== 'answered').map((r) => r.reason)).toEqual([
      expect.stringContaining('insufficient_scope'),
      'disk on fire',
      expect.stringContaining('insufficient_scope'),
      'disk on fire',
    ]);
    expect(new Set(records.map((r) => `${r.owner}/${r.stream}`)).size).toBe(records.length);
  });

  it("scopes are the call's own token's: a session whose client steps up runs the call it was refused", async () => {
    const { url, token } = await setup(withJwt);
    const call = await session(url, await token('files:read'));
    expect(await call('write')).toMatchObject(refused('files:read files:write'));
    expect(await call('write', await token('files:read files:write'))).toMatchObject(
      answered('written'),
    );
  });

  it('a call with an idempotency key is refused without the scopes, even when an earlier call with the key has its outcome', async () => {
    const { url, token } = await setup(withJwt);
    const writer = await token('files:read files:write');
    const reader = await token('files:read');
    ran.length = 0;
    const key = { 'Idempotency-Key': 'write-once-1' };
    expect(await modern(url, 'write', writer, key)).toMatchObject(answered('written'));
    expect(await modern(url, 'write', reader, key)).toMatchObject(
      refused('files:read files:write'),
    );
    expect(await modern(url, 'write', writer, key)).toMatchObject(answered('written'));
    const call = await session(url, writer);
    const sessionKey = { 'Idempotency-Key': 'write-once-2' };
    expect(await call('write', writer, sessionKey)).toMatchObject(answered('written'));
    expect(await call('write', reader, sessionKey)).toMatchObject(
      refused('files:read files:write'),
    );
    expect(ran).toEqual(['write', 'write']);
  });

  it("a tool sees the caller's client id and scopes, as currentExecution() and the SDK's authInfo", async () => {
    const { url, token, key } = await setup(withJwt);
    const bearer = await token('files:read admin');
    const expected = {
      clientId: 'app-1',
      scopes: ['files:read', 'admin'],
      sdk: { clientId: 'app-1', scopes: ['files:read', 'admin'] },
    };
    for (const call of [(name: string) => modern(url, name, bearer), await session(url, bearer)]) {
      const final = (await call('caller')) as { result: { content: Array<{ text: string }> } };
      expect(JSON.parse(final.result.content[0]!.text)).toEqual(expected);
    }
    // `azp` names the client when `client_id` does not (an OpenID provider's tokens).
    const azp = await token('files:read', { client_id: '', azp: 'app-2' });
    const final = (await modern(url, 'caller', azp)) as {
      result: { content: Array<{ text: string }> };
    };
    expect(JSON.parse(final.result.content[0]!.text)).toMatchObject({ clientId: 'app-2' });
    // `scp` holds them when `scope` does not (Entra ID's tokens: a string; Okta's: an array).
    for (const scp of ['files:read admin', ['files:read', 'admin']]) {
      const token = await new SignJWT({ scp, azp: 'app-3' })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setSubject('carol')
        .setIssuer(issuer)
        .setAudience(audience)
        .setExpirationTime('5m')
        .sign(key);
      const seen = (await modern(url, 'caller', token)) as {
        result: { content: Array<{ text: string }> };
      };
      expect(JSON.parse(seen.result.content[0]!.text)).toMatchObject({
        clientId: 'app-3',
        scopes: ['files:read', 'admin'],
      });
    }
  });

  it('without authentication nothing is checked: anyone may call every tool', async () => {
    const { url } = await setup(() => ({}));
    ran.length = 0;
    expect(await modern(url, 'write')).toMatchObject(answered('written'));
    expect(await (await session(url))('purge')).toMatchObject(answered('purged'));
    expect(ran).toEqual(['write', 'purge']);
  });

  it('a module with a scope that is not an OAuth scope-token is refused when defined, naming it', () => {
    const register = () => undefined;
    expect(() => defineToolModule({ name: 'm', requiredScopes: ['a b'], register })).toThrow(
      /defineToolModule\(m\): requiredScopes: "a b" is not an OAuth scope/,
    );
    expect(() =>
      defineToolModule({ name: 'm', toolScopes: { t: ['ok', 'bad"'] }, register }),
    ).toThrow(/toolScopes\.t: "bad\\"" is not an OAuth scope/);
  });
});
