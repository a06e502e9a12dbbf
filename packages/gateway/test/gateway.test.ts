import { connectResumingClient } from '@tidemark/fixtures/clients';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { TcpProxy } from '@tidemark/fixtures/tcp-proxy';

async function setup() {
  const stack = await embeddedStack({ replicas: 2 });
  onTestFinished(() => stack.stop());
  return { replicas: stack.gateways };
}

async function connectClient(url: string) {
  return connectResumingClient(url, { name: 'test-client', initialDelayMs: 50, maxDelayMs: 200 });
}

const numbers = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe('the gateway with the official TypeScript client (v2)', () => {
  it('initializes on one replica, lists and calls tools on the other: exact progress and result', async () => {
    const { replicas } = await setup();
    const proxy = await TcpProxy.start(replicas[0]!.port);
    onTestFinished(() => proxy.close());
    const client = await connectClient(`http://127.0.0.1:${proxy.port}/mcp`);
    proxy.target = replicas[1]!.port;
    proxy.cut();
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['count', 'flaky_count']);
    const progress: number[] = [];
    const result = await client.callTool(
      { name: 'count', arguments: { to: 10, delayMs: 0 } },
      { onprogress: (p) => void progress.push(p.progress) },
    );
    expect(progress).toEqual(numbers(10));
    expect(result.content).toEqual([{ type: 'text', text: numbers(10).join(',') }]);
  });

  it('a socket cut mid-stream resumes on the other replica with Last-Event-ID: exact progress, exact result', async () => {
    const { replicas } = await setup();
    const proxy = await TcpProxy.start(replicas[0]!.port);
    onTestFinished(() => proxy.close());
    const client = await connectClient(`http://127.0.0.1:${proxy.port}/mcp`);
    const progress: number[] = [];
    let cut = false;
    const result = await client.callTool(
      { name: 'count', arguments: { to: 30, delayMs: 20 } },
      {
        onprogress: (p) => {
          progress.push(p.progress);
          if (!cut && p.progress === 10) {
            cut = true;
            proxy.target = replicas[1]!.port;
            proxy.cut();
          }
        },
      },
    );
    expect(cut).toBe(true);
    expect(progress).toEqual(numbers(30));
    expect(result.content).toEqual([{ type: 'text', text: numbers(30).join(',') }]);
  });
});
