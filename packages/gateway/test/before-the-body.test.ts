import { gzipSync } from 'node:zlib';
import { tokenFileAuthenticator, type GatewayOptions } from '@tidemark/gateway';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { initializeRequest, MCP_HEADERS } from '@tidemark/fixtures/sse';

// A stranger costs the gateway its headers, not its body (issue #33): authentication happens
// before a byte is inflated or parsed, failed authentications are limited per address, and nesting
// is refused from the bytes before JSON.parse does the work.

const TOKEN = 'alice-token-0123456789';

async function setup(gateway: Partial<GatewayOptions>) {
  const stack = await embeddedStack({ partitions: 1, gateway });
  onTestFinished(() => stack.stop());
  return stack.gateways[0]!.url;
}

function post(url: string, body: string | Uint8Array, headers: Record<string, string> = {}) {
  return fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...headers }, body });
}

/** `depth` nested arrays, then bytes no JSON parser accepts. */
function deepThenBroken(depth: number): string {
  return '['.repeat(depth) + '%not json';
}

describe('before the body', () => {
  it('an unauthenticated body is never read: a gzip that is not even JSON is a 401, not a 400', async () => {
    const url = await setup({ authenticate: tokenFileAuthenticator(`${TOKEN} alice\n`) });
    const bomb = gzipSync(Buffer.from(deepThenBroken(4 * 1024 * 1024 - 16)));
    expect(bomb.length).toBeLessThan(16 * 1024); // a few KB on the wire, megabytes inflated
    const response = await post(url, bomb, { 'Content-Encoding': 'gzip' });
    expect(response.status).toBe(401);
    expect(response.headers.get('connection')).toBe('close');
    // The same bytes from an authenticated client are read, and refused for what they are.
    const authenticated = await post(url, bomb, {
      'Content-Encoding': 'gzip',
      Authorization: `Bearer ${TOKEN}`,
    });
    expect(authenticated.status).toBe(400);
    const answer = (await authenticated.json()) as { error: { message: string } };
    expect(answer.error.message).toBe('Invalid Request: nested deeper than 64 levels');
  });

  it('nesting is refused from the bytes before parsing; brackets inside strings do not count', async () => {
    const url = await setup({ maxJsonDepth: 8 });
    // Deep, then broken: a parser would have answered "Parse error"; the scan answers first.
    const deep = await post(url, deepThenBroken(9));
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: { code: number; message: string } }).error).toEqual({
      code: -32600,
      message: 'Invalid Request: nested deeper than 8 levels',
    });
    // At the limit it is the parser's turn.
    const atLimit = await post(url, deepThenBroken(8));
    expect(((await atLimit.json()) as { error: { code: number } }).error.code).toBe(-32700);
    // Brackets in strings (and escaped quotes before them) are text, not nesting.
    const init = initializeRequest();
    const texty = {
      ...init,
      params: { ...init.params, clientInfo: { name: `\\"${'[{'.repeat(40)}`, version: '1' } },
    };
    const ok = await post(url, JSON.stringify(texty));
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  });

  it('failed authentications per address: past the limit → 429 with Retry-After, said once without the token; a valid token from that address is still served (H1)', async () => {
    const warnings: Array<{ message: string; fields: Readonly<Record<string, unknown>> }> = [];
    const url = await setup({
      authenticate: tokenFileAuthenticator(`${TOKEN} alice\n`),
      maxFailedAuthPerMinute: 5,
      trustedProxies: ['loopback'],
      onWarning: (message, fields) => warnings.push({ message, fields }),
    });
    const init = JSON.stringify(initializeRequest());
    const from = (address: string, token: string) =>
      post(url, init, { Authorization: `Bearer ${token}`, 'X-Forwarded-For': address });
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 8; i++) {
      const response = await from('203.0.113.5', `wrong-token-guess-${i}-0123456789`);
      statuses.push(response.status);
      if (response.status === 429) retryAfter = response.headers.get('retry-after');
      await response.body?.cancel();
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // The right token from that address is served: one stranger's failures never lock out the
    // others behind the same address — an ingress pod's (security review H1).
    const right = await from('203.0.113.5', TOKEN);
    expect(right.status).toBe(200);
    await right.body?.cancel();
    // A request with no credential is not a failure: an OAuth client's first request has none
    // and gets the 401 that starts its sign-in, however many strangers failed before it.
    const bare = await post(url, init, { 'X-Forwarded-For': '203.0.113.5' });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toMatch(/^Bearer/);
    await bare.body?.cancel();
    // Another address is not held responsible.
    const other = await from('203.0.113.6', TOKEN);
    expect(other.status).toBe(200);
    await other.body?.cancel();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.fields).toEqual({ address: '203.0.113.5', failures: 5 });
    expect(JSON.stringify(warnings)).not.toContain('wrong-token');
  });

  it('without trusted proxies, X-Forwarded-For is not believed: the socket address counts', async () => {
    const url = await setup({
      authenticate: tokenFileAuthenticator(`${TOKEN} alice\n`),
      maxFailedAuthPerMinute: 2,
      onWarning: () => {},
    });
    const init = JSON.stringify(initializeRequest());
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      // A client inventing a new address each time still gets limited.
      const response = await post(url, init, {
        Authorization: 'Bearer wrong-token-guess-0123456789',
        'X-Forwarded-For': `198.51.100.${i}`,
      });
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses).toEqual([401, 401, 429]);
  });
});
