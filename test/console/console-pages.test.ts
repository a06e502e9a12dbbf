// The console's pages over a log, without a browser: what a tool wrote is text, never markup;
// unknown ids are 404s; options are checked; the resume journal is bounded.
import { createConsole, ResumeJournal } from '@tidemark/console';
import { defineToolModule } from '@tidemark/worker';
import * as z from 'zod';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { RawMcpClient } from '../support/sse.js';

const HOSTILE = '<img src=x onerror=alert(1)>';

const hostile = defineToolModule({
  name: 'hostile',
  register(server) {
    server.registerTool(
      'shout',
      { description: 'answers with markup', inputSchema: z.object({}) },
      async (_args, ctx) => {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: {
            progressToken: ctx.mcpReq._meta?.progressToken ?? 'p',
            progress: 1,
            message: HOSTILE,
          },
        });
        return { content: [{ type: 'text' as const, text: `<script>alert(2)</script>` }] };
      },
    );
  },
});

async function stackWithConsole() {
  const journal = new ResumeJournal();
  const stack = await embeddedStack({ modules: [hostile], gateway: { onResume: journal.record } });
  onTestFinished(() => stack.stop());
  const console = await createConsole({ log: stack.log, topics: stack.topics, journal });
  onTestFinished(() => console.close());
  const { gateway, url } = stack.gateways[0]!;
  gateway.app.use(console.basePath, console.router);
  return { url, origin: url.replace(/\/mcp$/, '') };
}

describe('console pages', () => {
  it('shows what a tool wrote as text: markup in a progress message or a result is escaped', async () => {
    const { url, origin } = await stackWithConsole();
    const client = new RawMcpClient(url);
    await client.initialize();
    const response = await client.post({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'shout', arguments: {}, _meta: { progressToken: 'p' } },
    });
    await response.text();
    const page = await fetch(`${origin}/console/sessions/${client.session}/calls/n7`);
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('tools/call shout');
    expect(text).not.toContain(HOSTILE);
    expect(text).not.toContain('<script>alert(2)');
    expect(text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(text).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
  });

  it('answers unknown sessions, calls and pages with 404, and malformed ids too', async () => {
    const { origin } = await stackWithConsole();
    for (const path of [
      '/console/sessions/AAAAAAAAAAAAAAAAAAAAAA',
      '/console/sessions/not%20an%20id',
      '/console/sessions/AAAAAAAAAAAAAAAAAAAAAA/calls/n1',
      '/console/nothing-here',
      '/console/assets/nothing.js',
    ])
      expect((await fetch(`${origin}${path}`)).status, path).toBe(404);
  });

  it('refuses bad options with the option’s name', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const { log, topics } = stack;
    await expect(createConsole({ log, topics, basePath: 'console' })).rejects.toThrow(/basePath/);
    await expect(createConsole({ log, topics, traceUrl: 'http://jaeger/trace/' })).rejects.toThrow(
      /traceUrl: .*\{traceId\}/,
    );
    await expect(createConsole({ log, topics, scanRecords: 0 })).rejects.toThrow(/scanRecords/);
    expect(() => new ResumeJournal(0)).toThrow(/capacity/);
  });

  it('keeps the newest resume decisions only, newest first', () => {
    const journal = new ResumeJournal(2);
    const heard: string[] = [];
    const stop = journal.listen((entry) => heard.push(entry.reason));
    for (const reason of ['a', 'b', 'c'])
      journal.record({ atMs: 0, session: 's', outcome: 'resume', reason });
    stop();
    journal.record({ atMs: 0, session: 's', outcome: 'resume', reason: 'd' });
    expect(journal.recent().map((entry) => entry.reason)).toEqual(['d', 'c']);
    expect(heard).toEqual(['a', 'b', 'c']);
  });
});
