import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, normalize, posix } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumBinary } from '../support/prerequisites.js';
import { ROOT } from './blocks.js';

// The docs site as a reader gets it: built by `vitepress build` (which fails on a link to a page
// that does not exist), served as static files, and opened in a real headless Chromium: every page
// loads without a console error or a failed request, and the search finds "idempotency".

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'tidemark-docs-'));
const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** The built site's pages, as paths to open. */
const pages = (dir = out, prefix = ''): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory())
      return name === 'assets' ? [] : pages(path, `${prefix}${name}/`);
    return name.endsWith('.html') && name !== '404.html' ? [`/${prefix}${name}`] : [];
  });

let browser: Browser;
let server: Server;
let origin: string;
beforeAll(async () => {
  await run(
    process.execPath,
    [join(ROOT, 'node_modules/vitepress/bin/vitepress.js'), 'build', 'docs', '--outDir', out],
    {
      cwd: ROOT,
      maxBuffer: 16 << 20,
    },
  );
  server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname));
    const file = join(out, path.endsWith('/') ? `${path}index.html` : path);
    try {
      const body = readFileSync(file.startsWith(out) ? file : join(out, '404.html'));
      res
        .writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' })
        .end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  browser = await chromium.launch({
    executablePath: chromiumBinary(),
    headless: true,
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
}, 180_000);
afterAll(async () => {
  await browser?.close();
  server?.close();
});

describe('the docs site', () => {
  it('has every page the sidebar names, each loading without a console error or a failed request', async () => {
    const all = pages();
    for (const page of [
      '/index.html',
      '/tutorial/index.html',
      '/how-to/write-tools.html',
      '/how-to/kubernetes.html',
      '/explanation/failures.html',
      '/reference/cli.html',
    ])
      expect(all).toContain(page);
    const context = await browser.newContext();
    const tab = await context.newPage();
    const problems: string[] = [];
    tab.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${tab.url()}: ${message.text()}`);
    });
    tab.on('pageerror', (error) => problems.push(`${tab.url()}: ${error.message}`));
    // A page's prefetches of the pages it links are aborted when the next page opens: not a failure.
    tab.on('requestfailed', (request) => {
      if (!/ERR_ABORTED/.test(request.failure()?.errorText ?? ''))
        problems.push(`${tab.url()}: ${request.url()} failed`);
    });
    tab.on('response', (response) => {
      if (response.status() >= 400)
        problems.push(`${tab.url()}: ${response.url()} ${response.status()}`);
    });
    for (const page of all) {
      await tab.goto(`${origin}${page}`, { waitUntil: 'load' });
      await expect.poll(() => tab.locator('.vp-doc').count(), { message: page }).toBeGreaterThan(0);
    }
    await context.close();
    expect(problems).toEqual([]);
  }, 180_000);

  it('answers "how do I write a tool", "how do I deploy on Kubernetes" and "what happens when a worker dies" from the home page', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${origin}/index.html`);
    for (const [link, heading] of [
      ['write tools', /@tidemark\/tools/],
      ['deploy on Kubernetes', /Deploy on Kubernetes/],
      ['failures we cause on purpose', /Failures we cause on purpose/],
    ] as const) {
      await tab.goto(`${origin}/index.html`);
      await tab.locator('.vp-doc a', { hasText: link }).first().click();
      await expect
        .poll(async () => (await tab.locator('h1').first().textContent()) ?? '')
        .toMatch(heading);
    }
    await tab.close();
  });

  it('links only to anchors its pages have', () => {
    const html = (page: string) => readFileSync(join(out, page), 'utf8');
    const ids = new Map(
      pages().map((page) => [
        page,
        new Set([...html(page).matchAll(/ id="([^"]+)"/g)].map((m) => m[1]!)),
      ]),
    );
    const broken: string[] = [];
    let checked = 0;
    for (const page of pages())
      for (const [, path = '', id = ''] of html(page).matchAll(
        /<a [^>]*href="([^"#:]*\.html)?#([^"]+)"/g,
      )) {
        const target =
          path === ''
            ? page
            : posix.normalize(path.startsWith('/') ? path : posix.join(posix.dirname(page), path));
        checked++;
        if (!ids.get(target)?.has(decodeURIComponent(id))) broken.push(`${page} → ${path}#${id}`);
      }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(100); // the headings' own anchors and the cross-page links
  });

  it('finds "idempotency" with its search', async () => {
    const tab = await browser.newPage();
    await tab.goto(`${origin}/index.html`);
    await tab.locator('.VPNavBarSearch button').first().click();
    await tab.locator('input.search-input').fill('idempotency');
    const results = tab.locator('.VPLocalSearchBox .results li');
    await expect.poll(() => results.count(), { timeout: 10_000 }).toBeGreaterThan(0);
    expect((await results.first().textContent())?.toLowerCase()).toContain('idempoten');
    await tab.close();
  });
});
