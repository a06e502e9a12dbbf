import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import sdkV1 from '@tidemark/examples/sdk-v1';
import { runTool } from '@tidemark/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';

// A module written against SDK v1 (server.tool, extra.sendNotification), run unchanged.
describe('a tool module written for SDK v1', () => {
  it('lists its tool with the input schema from its raw Zod shape', async () => {
    const stack = await embeddedStack({ modules: [sdkV1] });
    onTestFinished(() => stack.stop());
    const client = new Client({ name: 'v2-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
    onTestFinished(() => client.close());
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({
      name: 'countdown',
      description: expect.stringContaining('Counts down') as unknown,
      inputSchema: { type: 'object', properties: { from: { type: 'integer' } } },
    });
  });

  it('serves progress and the result to the official v2 and v1 clients', async () => {
    const stack = await embeddedStack({ modules: [sdkV1] });
    onTestFinished(() => stack.stop());
    const url = new URL(stack.gateways[0]!.url);

    const v2 = new Client({ name: 'v2-client', version: '1.0.0' });
    await v2.connect(new StreamableHTTPClientTransport(url));
    onTestFinished(() => v2.close());
    const progressV2: number[] = [];
    const resultV2 = await v2.callTool(
      { name: 'countdown', arguments: { from: 5, delayMs: 1 } },
      { onprogress: (p) => void progressV2.push(p.progress) },
    );
    expect(progressV2).toEqual([1, 2, 3, 4, 5]);
    expect(resultV2.content).toEqual([{ type: 'text', text: 'liftoff' }]);

    const v1 = new ClientV1({ name: 'v1-client', version: '1.0.0' });
    await v1.connect(new TransportV1(url));
    onTestFinished(() => v1.close());
    const progressV1: number[] = [];
    const resultV1 = await v1.callTool(
      { name: 'countdown', arguments: { from: 3, delayMs: 1 } },
      undefined,
      { onprogress: (p) => void progressV1.push(p.progress) },
    );
    expect(progressV1).toEqual([1, 2, 3]);
    expect(resultV1.content).toEqual([{ type: 'text', text: 'liftoff' }]);
  });

  it('runs in the test harness too, with its arguments validated by the shape', async () => {
    const run = await runTool(sdkV1, 'countdown', { from: 2, delayMs: 0 });
    expect(run.progress.map((p) => [p.progress, p.message])).toEqual([
      [1, 'T-1'],
      [2, 'T-0'],
    ]);
    const invalid = await runTool(sdkV1, 'countdown', { from: 0 });
    expect(invalid.result.isError).toBe(true);
  });
});
