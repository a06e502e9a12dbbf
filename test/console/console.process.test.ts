// The console, as a person sees it: a real headless Chromium (Debian's `chromium`, driven by
// playwright-core) against a real `tidemark dev` process that ran a cut-and-resumed call and a
// retried flaky_count. Screenshots are saved (TIDEMARK_UPDATE_SCREENSHOTS=1 writes the docs' (docs/console),
// in docs/console/) and checked structurally: the elements that carry the story are there.
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createRequire } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { startDevServer } from '../support/dev-server.js';
import { chromiumBinary } from '../support/prerequisites.js';
import { initializeRequest, MCP_HEADERS, readSse, RawMcpClient } from '@tidemark/fixtures/sse';

const root = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);
const bin = join(root, 'packages/cli/dist/bin.js');
const shots =
  process.env['TIDEMARK_UPDATE_SCREENSHOTS'] === '1'
    ? join(root, 'docs/console')
    : mkdtempSync(join(tmpdir(), 'tidemark-console-shots-'));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: chromiumBinary(),
    headless: true,
    // Root in a container has no user namespaces for Chromium's sandbox.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
});
afterAll(async () => {
  await browser?.close();
});

async function startDev(extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const port = await reservePorts();
  const data = mkdtempSync(join(tmpdir(), 'tidemark-console-'));
  const server = startDevServer(
    process.execPath,
    [bin, 'dev', '--port', String(port), '--data', data, ...extra],
    { env: { ...process.env, ...env } },
  );
  const endpoint = await server.url;
  for (let i = 0; i < 100 && !/Console: |tools: /.test(server.output()); i++) await sleep(20);
  return { endpoint, server, origin: endpoint.replace(/\/mcp$/, '') };
}

/** Reads a response's stream to its end; returns its messages. */
async function drain(response: Response): Promise<Array<Record<string, unknown>>> {
  const messages: Array<Record<string, unknown>> = [];
  await readSse(response, (event) => {
    if (event.data !== '') messages.push(JSON.parse(event.data) as Record<string, unknown>);
  });
  return messages;
}

/** WCAG 2 A and AA violations axe-core finds on a page (contrast, names, labels, structure). */
async function accessibilityViolations(url: string): Promise<string[]> {
  // axe is injected as a script: this page only relaxes the console's CSP for it.
  const page = await browser.newPage({ bypassCSP: true });
  try {
    await page.goto(url);
    await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
    return await page.evaluate<string[]>(
      `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } })
        .then((r) => r.violations.map((v) => v.id + ': ' + v.nodes.map((n) => n.target).join(' ')))`,
    );
  } finally {
    await page.close();
  }
}

async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(shots, { recursive: true });
  const path = join(shots, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect(statSync(path).size).toBeGreaterThan(10_000);
}

describe('the console, in a real browser', () => {
  it('shows the session, the retried call’s two generations with the reset reason, the resume decisions, and a new call’s progress live', async () => {
    // Traced (spans printed), so each call has a trace id, linked to a viewer by --trace-url.
    const { endpoint, server, origin } = await startDev(
      ['--trace-url', 'http://127.0.0.1:16686/trace/{traceId}'],
      { OTEL_TRACES_EXPORTER: 'console' },
    );
    // `npm start` / `tidemark dev` tells where the console is.
    expect(server.output()).toContain(`Console: ${origin}/console`);
    const client = new RawMcpClient(endpoint);
    await client.initialize();

    // A call cut after 3 events, resumed with its Last-Event-ID: the decision is "resume".
    const cut = await client.callCount(1, 6, 30, 3);
    const resumed = await drain(await client.resume(cut.ids.at(-1)!));
    expect(resumed.at(-1)).toMatchObject({ id: 1, result: {} });

    // flaky_count fails at 3 on attempt 1 and is retried: a second generation. The client drops
    // during the first and resumes after the second started: the decision is "reset".
    const controller = new AbortController();
    const flaky = await client.post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'flaky_count',
          arguments: { to: 4, delayMs: 100, failAt: 3 },
          _meta: { progressToken: 'f' },
        },
      },
      {},
      controller.signal,
    );
    let lastId: string | undefined;
    let seen = 0;
    await readSse(
      flaky,
      (event) => {
        if (event.id !== undefined) lastId = event.id;
        if (event.data.includes('notifications/progress') && ++seen === 2) return false;
      },
      controller,
    );
    await sleep(1_500);
    const afterReset = await drain(await client.resume(lastId!));
    expect(afterReset[0]).toMatchObject({ method: 'notifications/tidemark/reset' });
    expect(afterReset.at(-1)).toMatchObject({
      id: 2,
      result: { structuredContent: { numbers: [1, 2, 3, 4] } },
    });

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/console`);
    const sessionRow = page
      .getByTestId('sessions')
      .locator('tr', { hasText: client.session.slice(0, 12) });
    await expect.poll(() => sessionRow.count()).toBe(1);
    const decisions = page.getByTestId('resumes');
    await expect.poll(() => decisions.locator('.outcome-resume').count()).toBe(1);
    await expect.poll(() => decisions.locator('.outcome-reset').count()).toBe(1);
    expect(await decisions.innerText()).toContain('generation-superseded');
    expect(await decisions.innerText()).toContain(hostname()); // the replica that decided
    await shoot(page, 'overview');

    // The session, its calls, and the retried one's timeline: two generations, the reset marked.
    await sessionRow.getByRole('link').click();
    await page.getByTestId('calls').waitFor();
    const calls = await page.getByTestId('calls').innerText();
    expect(calls).toContain('tools/call count');
    expect(calls).toContain('tools/call flaky_count');
    await shoot(page, 'session');
    await page.getByRole('link', { name: 'tools/call flaky_count' }).click();
    await page.getByTestId('timeline').waitFor();
    expect(await page.getByTestId('generations').locator('li').count()).toBe(2);
    const resets = page.getByTestId('reset');
    expect(await resets.count()).toBe(1);
    expect(await resets.innerText()).toMatch(/generation-superseded.*retry/);
    const timeline = page.getByTestId('timeline');
    expect(await timeline.locator('.gen-border-0').count()).toBeGreaterThanOrEqual(3); // start, 1, 2
    expect(await timeline.locator('.gen-border-1').count()).toBe(6); // start, 1..4, result
    expect(await timeline.innerText()).toContain('result: 1,2,3,4');
    expect(await page.locator('a.trace').getAttribute('href')).toMatch(
      /^http:\/\/127\.0\.0\.1:16686\/trace\/[0-9a-f]{32}$/,
    );
    await shoot(page, 'call');
    for (const url of [`${origin}/console`, page.url(), `${origin}/console/subscriptions`])
      expect(await accessibilityViolations(url), url).toEqual([]);

    // Every page carries the policy, not the sign-in page alone; and "read-only" is a fact: a
    // mutating request to any page is refused (4xx) and changes nothing.
    const sessionUrl = `${origin}/console/sessions/${client.session}`;
    const pages = [`${origin}/console`, sessionUrl, page.url(), `${origin}/console/sessions/AAAA`];
    for (const url of pages) {
      const response = await fetch(url);
      expect(response.headers.get('content-security-policy'), url).toContain("default-src 'none'");
      await response.body?.cancel();
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const mutation = await fetch(url, {
          method,
          headers: { 'Content-Type': 'application/json' },
          ...(method === 'DELETE' ? {} : { body: '{"token":"x"}' }),
        });
        await mutation.body?.cancel();
        expect([mutation.status >= 400, mutation.status < 500], `${method} ${url}`).toEqual([
          true,
          true,
        ]);
      }
    }
    const after = await (await fetch(sessionUrl)).text();
    expect(after).toContain('tools/call count');
    expect(after).toContain('tools/call flaky_count');

    // Keyboard: the skip link is the first stop and lands on the content.
    await page.keyboard.press('Tab');
    expect(await page.locator(':focus').innerText()).toBe('Skip to content');

    // The live tail: a new call's progress appears while the call still runs.
    await page.goto(`${origin}/console`);
    await expect.poll(() => page.locator('#tail-state').innerText()).toMatch(/^Live/);
    const live = client.callCount(3, 10, 500);
    // Watched from the start: a tail that held progress back until the call ended would show
    // progress 2 only after `live` settled (the call takes 10 × 500 ms; progress 2 is due at 1 s).
    let finished = false;
    void live.then(() => (finished = true));
    const tail = page.getByTestId('live-tail');
    await tail.getByText('progress 2/10').waitFor({ timeout: 10_000 });
    expect(finished, 'progress 2 appeared only after the call had ended').toBe(false);
    await shoot(page, 'live-tail');
    await live;
    await tail.getByText('result: 1,2,3,4,5,6,7,8,9,10').waitFor({ timeout: 10_000 });
    await page.close();
  });

  it('answers this machine only, asks for the endpoint’s token when auth is on, shows that subject’s sessions only, and is off with --console off', async () => {
    const tokens = join(mkdtempSync(join(tmpdir(), 'tidemark-console-auth-')), 'tokens');
    writeFileSync(tokens, 'alice-token-0123456789abcdef alice\nbob-token-0123456789abcdefgh bob\n');
    const { endpoint, origin, server } = await startDev(['--auth-tokens', tokens]);
    const alice = new RawMcpClient(endpoint);
    const asAlice = { Authorization: 'Bearer alice-token-0123456789abcdef' };
    const init = await fetch(endpoint, {
      method: 'POST',
      headers: { ...MCP_HEADERS, ...asAlice },
      body: JSON.stringify(initializeRequest()),
    });
    expect(init.status).toBe(200);
    alice.session = init.headers.get('mcp-session-id')!;
    await init.text();

    // No token: the sign-in page (401), nothing of anyone's sessions.
    const anonymous = await fetch(`${origin}/console`);
    expect(anonymous.status).toBe(401);
    const signIn = await anonymous.text();
    expect(signIn).toContain('Bearer token');
    expect(signIn).not.toContain(alice.session.slice(0, 12));
    expect(anonymous.headers.get('content-security-policy')).toContain("script-src 'self'");
    // Alice sees her session; Bob does not.
    const asBob = { Authorization: 'Bearer bob-token-0123456789abcdefgh' };
    expect(await (await fetch(`${origin}/console`, { headers: asAlice })).text()).toContain(
      alice.session.slice(0, 12),
    );
    expect(await (await fetch(`${origin}/console`, { headers: asBob })).text()).not.toContain(
      alice.session.slice(0, 12),
    );
    expect(
      (await fetch(`${origin}/console/sessions/${alice.session}`, { headers: asBob })).status,
    ).toBe(404);
    // A rebinding page (a non-loopback Host) is refused before anything is read.
    // (fetch cannot set Host: node:http can.)
    const rebound = await new Promise<{ status: number }>((resolve, reject) => {
      const request = httpGet(
        `${origin}/console`,
        { headers: { ...asAlice, Host: 'evil.example' } },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0 });
        },
      );
      request.once('error', reject);
    });
    expect(rebound.status).toBe(403);
    // A peer this console does not count as this machine (127.0.0.2: the one a test can be without
    // listening beyond loopback), with a loopback Host and a valid token: 403 all the same.
    const foreign = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpGet(
        `${origin}/console`,
        { headers: asAlice, localAddress: '127.0.0.2' },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      request.once('error', reject);
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).not.toContain(alice.session.slice(0, 12));

    // In a browser: sign in with the form, the cookie carries the token from then on.
    const page = await browser.newPage();
    await page.goto(`${origin}/console`);
    await page.getByLabel('Bearer token').fill('wrong-token-0123456789abcdef');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Bearer token').fill('alice-token-0123456789abcdef');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('sessions').waitFor();
    expect(await page.getByTestId('sessions').innerText()).toContain(alice.session.slice(0, 12));
    const cookie = (await page.context().cookies()).find(
      (c) => c.name === 'tidemark_console_token',
    );
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    await page.close();

    // A console tab left open does not hold the server up: SIGTERM ends its live tail and dev exits.
    const tab = await fetch(`${origin}/console/events`, { headers: asAlice });
    expect(tab.headers.get('content-type')).toBe('text/event-stream');
    const ended = tab.text();
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', resolve));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
    await ended;

    const off = await startDev(['--console', 'off']);
    expect(off.server.output()).not.toContain('Console:');
    expect((await fetch(`${off.origin}/console`)).status).toBe(404);
  });
});
