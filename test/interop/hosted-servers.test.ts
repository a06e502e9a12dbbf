// MCP servers nobody here wrote, hosted by a worker (issue #60): the official "everything"
// reference server (@modelcontextprotocol/server-everything, on the v1 SDK), unmodified, run as
// stdio processes; its tools served through a gateway to the official TypeScript client — listed,
// called, with progress, and run again when its process is killed under a call.
import { createRequire } from 'node:module';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { hostedServerModule, type HostedServerModule } from '@tidemark/worker';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';

const everything = createRequire(import.meta.url).resolve(
  '@modelcontextprotocol/server-everything/dist/index.js',
);

async function hosting(server: HostedServerModule) {
  const executions: Array<{ stream: string; attempt: number; cause: string }> = [];
  const stack = await embeddedStack({
    modules: [server],
    worker: { onExecution: (e) => executions.push(e) },
  });
  onTestFinished(async () => {
    await stack.stop();
    await server.close();
  });
  const client = new Client({ name: 'hosted-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
  onTestFinished(() => client.close());
  return { client, executions };
}

/** The reference server, unmodified, as `processes` stdio processes. */
const everythingServer = (processes: number) =>
  hostedServerModule({
    name: 'everything',
    command: process.execPath,
    args: [everything, 'stdio'],
    processes,
  });

const textOf = (result: { content?: unknown }) =>
  (result.content as Array<{ text?: string }>)[0]?.text ?? '';

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
    const server = everythingServer(1);
    const { client, executions } = await hosting(server);
    const call = client.callTool({
      name: 'trigger-long-running-operation',
      arguments: { duration: 2, steps: 4 },
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    const [pid] = await server.pids();
    process.kill(pid!, 'SIGKILL');
    const result = await call;
    expect(result.isError).not.toBe(true);
    // The call's stream (n0 is the initialize): run again as its next generation, a retry.
    const ran = executions.filter((e) => e.stream === executions.at(-1)!.stream);
    expect(ran.map((e) => [e.attempt, e.cause])).toEqual([
      [1, 'first'],
      [2, 'retry'],
    ]);
    expect(await server.pids()).not.toContain(pid);
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
