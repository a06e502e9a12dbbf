// The console's pages over a log, without a browser: what a tool wrote is text, never markup;
// unknown ids are 404s; options are checked; the resume journal is bounded.
import { createConsole, ResumeJournal } from '@tidemark/console';
import { tokenFileAuthenticator } from '@tidemark/gateway';
import { defineToolModule } from '@tidemark/worker';
import * as z from 'zod';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import counting from '@tidemark/examples/counting';
import events from '@tidemark/examples/events';
import { AuditLog, EventRegistry } from '@tidemark/log';
import { eventStreamKey, topicNames } from '@tidemark/protocol';
import { EmbeddedLog } from '@tidemark/embedded-log';
import express from 'express';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { approvalsModule } from '@tidemark/examples/approvals';
import { paymentsModule, PretendPayments } from '@tidemark/examples/payments';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';
import { RawMcpClient } from '@tidemark/fixtures/sse';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
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

async function stackWithConsole(
  modules = [hostile],
  mcp?: { path: string; tools: () => readonly string[] },
) {
  const journal = new ResumeJournal();
  const stack = await embeddedStack({ modules, gateway: { onResume: journal.record } });
  onTestFinished(() => stack.stop());
  const console = await createConsole({
    log: stack.log,
    topics: stack.topics,
    journal,
    ...(mcp === undefined ? {} : { mcp }),
  });
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

  it('shows a task: its kind, its call, two executions and its status history to completed', async () => {
    const { url, origin } = await stackWithConsole([counting]);
    const created = await rpc(url, 'tools/call', {
      name: 'flaky_count',
      arguments: { to: 3, failAt: 2 },
    });
    const taskId = String(created.body.result?.['taskId']);
    await pollTask([url], taskId, ['completed']);
    expect(await (await fetch(`${origin}/console`)).text()).toMatch(
      new RegExp(`${taskId.slice(0, 12)}[^]*?<td>task</td>`),
    );
    const task = await (await fetch(`${origin}/console/sessions/${taskId}`)).text();
    expect(task).toMatch(/tools\/call flaky_count/);
    const page = await (await fetch(`${origin}/console/sessions/${taskId}/calls/t`)).text();
    expect(page).toMatch(/data-testid="task-status"\s*>completed</);
    const history = /<ol class="history">([^]*?)<\/ol>/.exec(page)?.[1] ?? '';
    expect([...history.matchAll(/status-(\w+)/g)].map((m) => m[1])).toEqual([
      'working',
      'working',
      'completed',
    ]);
    expect(page).toContain('The task runs again (a new execution).');
    expect(page.match(/class="gen gen-\d"\s*>generation \d/g)).toHaveLength(2);
  });

  it('shows a call’s durable steps: each journaled once, in the generation that ran it, with its tries and its sleeps', async () => {
    const { url, origin } = await stackWithConsole([
      paymentsModule(new PretendPayments(undefined)),
    ]);
    const client = new RawMcpClient(url);
    await client.initialize();
    const response = await client.post({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: {
        name: 'pay',
        arguments: {
          to: 'ada@example.com',
          amountCents: 5,
          failAfterCharge: 1,
          receiptRefusals: 1,
          receiptRetryAfterMs: 5,
          receiptAfterMs: 1_100,
        },
      },
    });
    expect(await response.text()).toContain('chargeId');
    const page = await (
      await fetch(`${origin}/console/sessions/${client.session}/calls/n3`)
    ).text();
    const steps = /data-testid="steps">([^]*?)<\/ol>/.exec(page)?.[1] ?? '';
    expect(steps.replace(/\s+/g, ' ')).toMatch(
      /charge<\/span> — ok, ran in generation 1 [^]*sleep before receipt<\/span> — woke [^]*receipt<\/span> — ok after 2 tries, ran in generation 2/,
    );
  });

  it('shows an approval as its audit trail: the signal asked, its answer (escaped), the decision — never its URL', async () => {
    const asks: string[] = [];
    const module = approvalsModule({ notify: (ask) => void asks.push(ask.url) });
    const { url, origin } = await stackWithConsole([module]);
    const client = new RawMcpClient(url);
    await client.initialize();
    const called = client.post({
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'transfer', arguments: { to: 'bob', amountCents: 5, approver: 'ana' } },
    });
    await vi.waitFor(() => expect(asks).toHaveLength(1), { timeout: 10_000 });
    const token = asks[0]!.slice(asks[0]!.lastIndexOf('/') + 1);
    // Waiting, it is listed among the resting calls (an operator's page), its expiry a day on.
    const resting = await (await fetch(`${origin}/console/resting`)).text();
    expect(resting.replace(/\s+/g, ' ')).toMatch(
      /data-testid="resting-calls"[^]*for signal <code>approval<\/code>[^]*expires [^]*n4<\/td>/,
    );
    const answered = await fetch(`${url}/signals/${token}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ approved: true, comment: HOSTILE }),
    });
    expect(answered.status).toBe(200);
    expect(await (await called).text()).toContain('transferId');
    const page = await (
      await fetch(`${origin}/console/sessions/${client.session}/calls/n4`)
    ).text();
    const steps = (/data-testid="steps">([^]*?)<\/ol>/.exec(page)?.[1] ?? '').replace(/\s+/g, ' ');
    expect(steps).toMatch(
      /signal approval<\/span> — asked in generation 1, open until [^]*tidemark:answer approval<\/span> — answered [^]* through its URL: <span class="mono">\{&quot;approved&quot;:true,&quot;comment&quot;:&quot;&lt;img [^]*decision<\/span> — ok/,
    );
    expect(page).not.toContain(token);
    expect(page).not.toContain('<img src=x');
  });

  it('a live tail that cannot keep up skips records and says how many: every record is delivered or counted', async () => {
    const { url, origin } = await stackWithConsole([counting]);
    const events: string[] = [];
    let paused!: IncomingMessage;
    await new Promise<void>((resolve, reject) => {
      httpGet(`${origin}/console/events`, (res) => {
        paused = res;
        res.pause(); // a tab that stopped reading
        resolve();
      }).once('error', reject);
    });
    await sleep(200); // the tail starts at the log's end of now
    const client = new RawMcpClient(url);
    await client.initialize();
    const to = 20_000;
    const call = await client.post({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'count', arguments: { to }, _meta: { progressToken: 'p' } },
    });
    await call.text();
    let text = '';
    paused.on('data', (chunk: Buffer) => (text += chunk.toString()));
    paused.resume();
    const expected = to + 2 + 2; // initialize: start + result; the call: start, 20,000 progress, result
    const counted = () => {
      events.length = 0;
      let skipped = 0;
      for (const block of text.split('\n\n')) {
        if (block.startsWith('event: record')) events.push(block);
        const match = /^event: skipped\ndata: (.*)$/.exec(block);
        if (match !== null) skipped += (JSON.parse(match[1]!) as { count: number }).count;
      }
      return { delivered: events.length, skipped };
    };
    await expect
      .poll(() => counted().delivered + counted().skipped, { timeout: 20_000 })
      .toBe(expected);
    expect(counted().skipped).toBeGreaterThan(0);
    paused.destroy();

    // That call's page shows its start, its first 500 and last 1,500 records, and what it left out.
    const page = await (
      await fetch(`${origin}/console/sessions/${client.session}/calls/n1`)
    ).text();
    expect(page.match(/<li\s+class="entry /g)).toHaveLength(2_000);
    expect(page).toMatch(/… 18002 events not shown/);
    expect(page).toContain('result: 1,2,3');
  });

  it('before anything happened, says where to connect and what is served', async () => {
    const { url, origin } = await stackWithConsole([counting], {
      path: '/mcp',
      tools: () => ['count', 'flaky_count'],
    });
    const text = (await (await fetch(`${origin}/console`)).text()).replace(/\s+/g, ' ');
    expect(text).toContain(
      `No sessions yet. Connect an MCP client to <code>${url}</code>; it serves <code>count</code>, <code>flaky_count</code>.`,
    );
  });

  it('lists plain 2026-07-28 calls (no session) and sessions their clients ended', async () => {
    const { url, origin } = await stackWithConsole([counting]);
    const plain = await rpc(
      url,
      'tools/call',
      { name: 'count', arguments: { to: 2 } },
      { tasks: false },
    );
    expect(plain.body.result?.['content']).toEqual([{ type: 'text', text: '1,2' }]);
    const client = new RawMcpClient(url);
    await client.initialize();
    const ended = await fetch(url, {
      method: 'DELETE',
      headers: { 'Mcp-Session-Id': client.session, 'MCP-Protocol-Version': '2025-11-25' },
    });
    expect(ended.status).toBe(200);
    await expect
      .poll(async () => (await fetch(`${origin}/console`)).text())
      .toMatch(
        new RegExp(
          `data-testid="stateless-calls"[^]*<code>count</code>[^]*data-testid="ended-sessions"[^]*${client.session.slice(0, 12)}[^]*ended`,
        ),
      );
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

  it('a malformed sign-in cookie is no cookie: the sign-in page (401), never a 500', async () => {
    const stack = await embeddedStack({ modules: [hostile] });
    onTestFinished(() => stack.stop());
    const console = await createConsole({
      log: stack.log,
      topics: stack.topics,
      authenticate: tokenFileAuthenticator('alice-token-0123456789-0123456789 alice\n'),
    });
    onTestFinished(() => console.close());
    const { gateway, url } = stack.gateways[0]!;
    gateway.app.use(console.basePath, console.router);
    const origin = url.replace(/\/mcp$/, '');
    for (const cookie of ['%E0%A4%A', 'a%20b', 'x"; y', '%'])
      expect(
        (
          await fetch(`${origin}/console`, {
            headers: { Cookie: `tidemark_console_token=${cookie}` },
          })
        ).status,
        cookie,
      ).toBe(401);
    const signedIn = await fetch(`${origin}/console`, {
      headers: { Cookie: 'tidemark_console_token=alice-token-0123456789-0123456789' },
    });
    expect(signedIn.status).toBe(200);
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
    expect(() => new ResumeJournal({ capacity: 0 })).toThrow(/capacity/);
    expect(() => new ResumeJournal({ replica: '' })).toThrow(/replica/);
  });

  it('keeps the newest resume decisions only, newest first, each with its replica', () => {
    const journal = new ResumeJournal({ capacity: 2, replica: 'gateway-a' });
    const heard: string[] = [];
    const stop = journal.listen((entry) => heard.push(entry.reason));
    for (const reason of ['a', 'b', 'c'])
      journal.record({ atMs: 0, session: 's', outcome: 'resume', reason });
    stop();
    journal.record({ atMs: 0, session: 's', outcome: 'resume', reason: 'd' });
    expect(journal.recent().map((entry) => entry.reason)).toEqual(['d', 'c']);
    expect(journal.recent()[0]).toMatchObject({ replica: 'gateway-a', session: 's' });
    expect(heard).toEqual(['a', 'b', 'c']);
  });
});

describe('the events page', () => {
  it('lists the event types and every webhook subscription with its deliveries, never a callback’s query', async () => {
    const { origin, stack } = await eventsStack();
    const registry = new EventRegistry({
      port: stack.log,
      topic: stack.topics.subscriptions,
      partitionCount: 2,
    });
    const subscription = {
      id: 'sub_console_test_0001',
      subject: 'alice',
      name: 'ticks',
      arguments: { everyMs: 1000 },
      stream: eventStreamKey('ticks', { everyMs: 1000 }),
      url: 'https://hooks.example/mcp?mcp_event_subscription=secret-routing-key',
      sealedSecret: 's1.1.x',
      createdAtMs: Date.now(),
      expiresAtMs: Date.now() + 60_000,
      start: { offset: 0n, setAtMs: Date.now() },
    };
    await registry.putSubscription(subscription);
    await registry.putDeliveryState(subscription, {
      position: 5n,
      startSetAtMs: subscription.start.setAtMs,
      status: {
        delivered: 5,
        failingSinceMs: Date.now(),
        lastError: 'the receiver answered 503',
        recent: [
          { messageId: 'evt_delivered_one', atMs: Date.now() - 1_000, outcome: '204' },
          { messageId: 'evt_refused_two', atMs: Date.now(), outcome: 'the receiver answered 503' },
        ],
      },
    });
    const page = await (await fetch(`${origin}/console/subscriptions`)).text();
    expect(page).toContain('<code>ticks</code>');
    expect(page).toContain('sub_console_');
    expect(page).toContain('https://hooks.example/mcp');
    expect(page).not.toContain('secret-routing-key');
    expect(page).toContain('the receiver answered 503');
    expect(page).toMatch(/<td>5<\/td>/);
    // Recent deliveries, newest first.
    expect(page.indexOf('evt_refused_two')).toBeLessThan(page.indexOf('evt_delivered_one'));
    expect(page).toContain('>204<');
  });
});

describe('the audit page', () => {
  it('lists the calls of the audit trail, the last to end first: a signed-in subject its own, an operator everyone’s', async () => {
    const stack = await embeddedStack({ modules: [hostile] });
    onTestFinished(() => stack.stop());
    const trail = new AuditLog({ log: stack.log, topic: stack.topics.audit, partitionCount: 2 });
    const call = (subject: string, stream: string, atMs: number) =>
      trail.append({
        atMs,
        owner: `owner-of-${subject}`,
        stream,
        tool: 'shout',
        ...(subject === 'alice' ? { module: 'mcp-server:weather' } : {}),
        subject,
        clientId: 'app-1',
        scopes: ['files:read'],
        arguments: 'sha256:x',
        outcome: subject === 'bob' ? 'refused' : 'answered',
        ...(subject === 'bob' ? { reason: `insufficient_scope ${HOSTILE}` } : {}),
        executions: 1,
      });
    await call('alice', 'n1', Date.now() - 2_000);
    await call('bob', 'n1', Date.now() - 1_000);
    await call('alice', 'n2', Date.now());
    const pageOf = async (authenticate?: ReturnType<typeof tokenFileAuthenticator>) => {
      const console = await createConsole({
        log: stack.log,
        topics: stack.topics,
        ...(authenticate === undefined ? {} : { authenticate }),
      });
      onTestFinished(() => console.close());
      const app = express().use(console.basePath, console.router);
      const server = app.listen(0, '127.0.0.1');
      await once(server, 'listening');
      onTestFinished(() => void server.close());
      const { port } = server.address() as AddressInfo;
      const token = 'alice-token-0123456789-0123456789';
      const response = await fetch(`http://127.0.0.1:${port}/console/audit`, {
        headers: { Cookie: `tidemark_console_token=${token}` },
      });
      expect(response.status).toBe(200);
      return (await response.text()).replace(/\s+/g, ' ');
    };
    const everyone = await pageOf();
    expect(everyone).toContain('data-testid="audit-records"');
    expect(everyone.match(/<tr>/g)?.length).toBe(4); // the header and three calls
    // The last to end first; a reason is text, never markup.
    expect(everyone.indexOf('· n2<')).toBeLessThan(everyone.indexOf('bob'));
    expect(everyone).toContain('insufficient_scope &lt;img');
    // Which module served the call: a hosted server's name.
    expect(everyone).toContain('<small>mcp-server:weather</small>');
    const alice = await pageOf(tokenFileAuthenticator('alice-token-0123456789-0123456789 alice\n'));
    expect(alice).toContain('Your calls');
    expect(alice.match(/<tr>/g)?.length).toBe(3);
    expect(alice).not.toContain('bob');
  });
});

async function eventsStack() {
  const stack = await embeddedStack({ modules: [events] });
  onTestFinished(() => stack.stop());
  const console = await createConsole({
    log: stack.log,
    topics: stack.topics,
    mcp: { path: '/mcp', tools: () => [], events: () => ['ticks', 'incidents', 'deployments'] },
  });
  onTestFinished(() => console.close());
  const { gateway, url } = stack.gateways[0]!;
  gateway.app.use(console.basePath, console.router);
  return { stack, origin: url.replace(/\/mcp$/, '') };
}

describe('the events page on a log from before the Events extension', () => {
  it('says to create the topics instead of failing', async () => {
    const log = new EmbeddedLog({ path: ':memory:' });
    const topics = topicNames('old.');
    for (const role of ['requests', 'events', 'streams', 'sessions'] as const)
      log.createTopic({
        name: topics[role],
        partitions: 2,
        cleanup: role === 'streams' || role === 'sessions' ? 'compact' : 'delete',
      });
    const console = await createConsole({ log, topics });
    onTestFinished(async () => {
      console.close();
      await log.close();
    });
    const app = express();
    app.use(console.basePath, console.router);
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    onTestFinished(() => void server.close());
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/console/subscriptions`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('tidemark topics create');
  });
});
