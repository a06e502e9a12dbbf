// MCP servers nobody here wrote, hosted by a worker (issue #60): the official "everything"
// reference server (@modelcontextprotocol/server-everything, on the v1 SDK), unmodified, run as
// stdio processes; its tools served through a gateway to the official TypeScript client — listed,
// called, with progress, and run again when its process is killed under a call.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { AuditLog } from '@tidemark/log';
import { hostedServerModule, type HostedServerModule } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pollTask, rpc } from '@tidemark/fixtures/task-client';
import { reservePorts } from '@tidemark/kafka-fixtures';
import { devInProcess } from '../support/dev-in-process.js';
import { goMcpEverything, pythonWithMcp } from '../support/prerequisites.js';

const everything = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
);

async function hosting(
  server: HostedServerModule,
  client = new Client({ name: 'hosted-test', version: '1.0.0' }),
) {
  const executions: Array<{ stream: string; attempt: number; cause: string }> = [];
  const stack = await embeddedStack({
    modules: [server],
    worker: { onExecution: (e) => executions.push(e) },
  });
  onTestFinished(async () => {
    await stack.stop();
    await server.close();
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
  onTestFinished(() => client.close());
  return { client, executions, stack };
}

/** The reference server, unmodified, as `processes` stdio processes. */
const everythingServer = (processes: number, pingEveryMs?: number) =>
  hostedServerModule({
    name: 'everything',
    command: process.execPath,
    args: [everything, 'stdio'],
    processes,
    ...(pingEveryMs === undefined ? {} : { pingEveryMs }),
  });

const textOf = (result: { content?: unknown }) =>
  (result.content as Array<{ text?: string }>)[0]?.text ?? '';

/**
 * Sends `signal` to the one process of `server` `afterMs` into a long call: the call runs again
 * (its stream's next generation, a retry) on a process started in its place, and answers.
 */
async function signalledUnderACall(
  server: HostedServerModule,
  signal: NodeJS.Signals,
  afterMs: number,
): Promise<void> {
  const { client, executions } = await hosting(server);
  const call = client.callTool({
    name: 'trigger-long-running-operation',
    arguments: { duration: 2, steps: 4 },
  });
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  const [pid] = await server.pids();
  process.kill(pid!, signal);
  const result = await call;
  expect(result.isError).not.toBe(true);
  // The call's stream (n0 is the initialize): run again as its next generation, a retry.
  const ran = executions.filter((e) => e.stream === executions.at(-1)!.stream);
  expect(ran.map((e) => [e.attempt, e.cause])).toEqual([
    [1, 'first'],
    [2, 'retry'],
  ]);
  expect(await server.pids()).not.toContain(pid);
}

describe('a hosted stdio MCP server (server-everything, unmodified)', () => {
  it('serves its tools as the worker’s own: listed with their schemas, called, with progress', async () => {
    const server = everythingServer(2);
    const { client } = await hosting(server);
    const { tools } = await client.listTools();
    const echo = tools.find((t) => t.name === 'echo');
    expect(echo?.inputSchema).toMatchObject({ properties: { message: { type: 'string' } } });
    expect(textOf(await client.callTool({ name: 'echo', arguments: { message: 'hi' } }))).toContain(
      'hi',
    );
    const progress: number[] = [];
    const long = await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(long.isError).not.toBe(true);
    expect(progress).toEqual([1, 2, 3, 4]);
  });

  it('a process killed under a call: the call runs again on another, the client gets its result', async () => {
    await signalledUnderACall(everythingServer(1), 'SIGKILL', 700);
  });

  it('its elicitation and sampling reach the client, their answers go back', async () => {
    const client = new Client(
      { name: 'hosted-test', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} }, sampling: {} } },
    );
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } };
    });
    client.setRequestHandler('sampling/createMessage', (request) => {
      asked.push(JSON.stringify(request.params.messages[0]?.content));
      return {
        model: 'test-model',
        role: 'assistant',
        content: { type: 'text', text: 'a sampled answer' },
      };
    });
    const { client: connected } = await hosting(everythingServer(1), client);
    const elicited = await connected.callTool({
      name: 'trigger-elicitation-request',
      arguments: {},
    });
    expect(JSON.stringify(elicited.content)).toContain('Ada Lovelace');
    const sampled = await connected.callTool({
      name: 'trigger-sampling-request',
      arguments: { prompt: 'say something', maxTokens: 20 },
    });
    expect(JSON.stringify(sampled.content)).toContain('a sampled answer');
    expect(asked[0]).toMatch(/Please provide inputs/);
    expect(asked[1]).toContain('say something');
  });

  it('on 2026-07-28 (no push channel) its elicitation is an input_required round: answered, the same child call goes on — a stateless call and a task', async () => {
    const server = everythingServer(1);
    const { stack } = await hosting(server);
    const url = stack.gateways[0]!.url;
    const name = 'trigger-elicitation-request';
    const answer = { action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } };
    // A stateless call: its client answers and calls again with the state it was given.
    const first = await rpc(url, 'tools/call', { name, arguments: {} }, { tasks: false });
    const asked = first.body.result as {
      resultType: string;
      inputRequests: Record<string, { method: string; params: { message: string } }>;
      requestState: string;
    };
    expect(asked.resultType).toBe('input_required');
    const [key, request] = Object.entries(asked.inputRequests)[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { message: expect.stringMatching(/Please provide inputs/) as unknown },
    });
    const second = await rpc(
      url,
      'tools/call',
      { name, arguments: {}, inputResponses: { [key]: answer }, requestState: asked.requestState },
      { tasks: false },
    );
    expect(JSON.stringify(second.body.result?.['content'])).toContain('Ada Lovelace');
    // A task: it asks through tasks/get, takes the answer through tasks/update, then completes.
    const created = await rpc(url, 'tools/call', { name, arguments: {} });
    const taskId = String(created.body.result?.['taskId']);
    const waiting = await pollTask([url], taskId, ['input_required']);
    const keys = Object.keys(waiting['inputRequests'] as object);
    await rpc(url, 'tasks/update', { taskId, inputResponses: { [keys[0]!]: answer } });
    const done = await pollTask([url], taskId, ['completed', 'failed']);
    expect(JSON.stringify(done['result'])).toContain('Ada Lovelace');
    // Each answered by its one child call: a call run again would have asked again instead.
  });

  it('a process that stops answering under a call is killed; the call runs again on another', async () => {
    await signalledUnderACall(everythingServer(1, 300), 'SIGSTOP', 500);
  });

  it('cancelled by its client: the call ends at once, its audit record says cancelled', async () => {
    const { client, stack } = await hosting(everythingServer(1));
    const cancel = new AbortController();
    const call = client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 100 } },
      {
        signal: cancel.signal,
        onprogress: (p) => {
          if (p.progress === 1) cancel.abort(new Error('not needed any more'));
        },
      },
    );
    await expect(call).rejects.toThrow(/not needed any more/);
    const trail = new AuditLog({ log: stack.log, topic: stack.topics.audit, partitionCount: 2 });
    await expect
      .poll(async () => (await trail.read()).map((r) => [r.tool, r.outcome]))
      .toEqual([['trigger-long-running-operation', 'cancelled']]);
  });

  it('two servers with a tool of the same name: the start stops, naming both and the way out', async () => {
    const one = everythingServer(1);
    const other = hostedServerModule({
      name: 'other',
      command: process.execPath,
      args: [everything, 'stdio'],
      processes: 1,
    });
    onTestFinished(async () => {
      await Promise.all([one.close(), other.close()]);
    });
    await expect(embeddedStack({ modules: [one, other] })).rejects.toThrow(
      /--mcp-server other: register failed: its tool echo is also --mcp-server everything's \(--mcp-server-prefix/,
    );
  });

  it('a server that does not start stops the worker’s start, with its stderr', async () => {
    const server = hostedServerModule({
      name: 'broken',
      command: process.execPath,
      args: ['-e', 'console.error("no API_KEY set"); process.exit(3)'],
      processes: 1,
    });
    onTestFinished(() => server.close());
    await expect(embeddedStack({ modules: [server] })).rejects.toThrow(
      /hosted server broken: .* did not start: .*no API_KEY set/,
    );
  });
});

describe('a hosted Streamable HTTP server (the Go SDK’s example server, unmodified)', () => {
  async function goOverHttp(): Promise<string> {
    const port = await reservePorts();
    const server = spawn(goMcpEverything(), ['-http', `127.0.0.1:${port}`], { stdio: 'ignore' });
    onTestFinished(() => void server.kill('SIGKILL'));
    const url = `http://127.0.0.1:${port}/mcp`;
    await expect
      .poll(
        () =>
          fetch(url, { method: 'GET' }).then(
            () => true,
            () => false,
          ),
        { timeout: 15_000 },
      )
      .toBe(true);
    return url;
  }

  it('serves its tools as the worker’s own: called, its elicitation answered by the client', async () => {
    const url = await goOverHttp();
    const client = new Client(
      { name: 'hosted-test', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler('elicitation/create', () => ({
      action: 'accept',
      content: { random: 'over http' },
    }));
    const server = hostedServerModule({ name: 'go', url, allowLoopback: true, processes: 1 });
    const { client: connected } = await hosting(server, client);
    const { tools } = await connected.listTools();
    expect(tools.map((t) => t.name)).toContain('greet');
    expect(textOf(await connected.callTool({ name: 'greet', arguments: { name: 'Ada' } }))).toBe(
      'Hi Ada',
    );
    expect(textOf(await connected.callTool({ name: 'elicit (form)', arguments: {} }))).toBe(
      'over http',
    );
  });

  it('held to the webhooks’ rules: https, public addresses — refused before any connection', async () => {
    const refused = async (url: string, allowLoopback = false) => {
      const server = hostedServerModule({ name: 'remote', url, allowLoopback, processes: 1 });
      onTestFinished(() => server.close());
      return embeddedStack({ modules: [server] }).then(
        async (stack) => {
          await stack.stop();
          return 'started';
        },
        (error: unknown) => (error as Error).message,
      );
    };
    expect(await refused('http://127.0.0.1:9/mcp')).toMatch(
      /hosted server remote: the hosted server URL must use https, not http/,
    );
    expect(await refused('https://10.0.0.1/mcp')).toMatch(
      /the hosted server URL names a private, link-local or otherwise non-public address/,
    );
    expect(await refused('https://169.254.169.254/mcp')).toMatch(/non-public address/);
    expect(await refused('https://localhost/mcp')).toMatch(
      /the hosted server host localhost resolves to a loopback address/,
    );
    expect(await refused('https://user:pw@mcp.example.com/mcp')).toMatch(
      /must not carry credentials/,
    );
  });
});

describe('under tidemark dev', () => {
  it('three servers in three languages behind one endpoint, prefixed: each listed and called', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tidemark-hosted-dev-'));
    const dev = await devInProcess(dir, [
      ...['--port', '0', '--data', join(dir, 'data'), '--console', 'off'],
      ...['--mcp-server-prefix', '--mcp-server-processes', '1'],
      ...['--mcp-server', `ts=${process.execPath} ${everything} stdio`],
      ...['--mcp-server', `go=${goMcpEverything()}`],
      ...['--mcp-server', `time=${pythonWithMcp()} -m mcp_server_time`],
    ]);
    onTestFinished(() => dev.stop());
    const client = new Client({ name: 'hosted-dev', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(dev.url)));
    onTestFinished(() => client.close());
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['ts_echo', 'go_greet', 'time_get_current_time']));
    expect(
      textOf(await client.callTool({ name: 'ts_echo', arguments: { message: 'hi' } })),
    ).toMatch(/hi/);
    expect(textOf(await client.callTool({ name: 'go_greet', arguments: { name: 'Ada' } }))).toBe(
      'Hi Ada',
    );
    const now = await client.callTool({
      name: 'time_get_current_time',
      arguments: { timezone: 'UTC' },
    });
    expect(now.structuredContent).toMatchObject({ timezone: 'UTC' });
  });
});
