import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { RawMcpClient } from '../support/sse.js';

// The gateway's SSE responses: keep-alive comments from one timer for all of them, and a replay
// paced to a slow reader instead of cut when its buffer fills.

describe('SSE responses', () => {
  it('an idle stream gets keep-alive comments; a busy one is left alone', async () => {
    const stack = await embeddedStack({ gateway: { keepAliveMs: 100 } });
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const controller = new AbortController();
    const response = await fetch(stack.gateways[0]!.url, {
      headers: {
        Accept: 'text/event-stream',
        'Mcp-Session-Id': client.session,
        'MCP-Protocol-Version': '2025-11-25',
      },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = Date.now() + 450;
    while (Date.now() < until) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    controller.abort();
    // Every 50 ms a stream idle for 50 ms gets one: 3 to 9 in 450 ms.
    const comments = text.split(': keep-alive\n\n').length - 1;
    expect(comments).toBeGreaterThanOrEqual(3);
    expect(comments).toBeLessThanOrEqual(9);
  });

  it('a long replay to a slow reader is paced to it, not cut: every event in one response', async () => {
    const stack = await embeddedStack({ gateway: { maxBufferedBytes: 64 * 1024 } });
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const { ids } = await client.callCount(1, 3_000, 0);
    expect(ids.length).toBe(3_002); // the priming event, 3,000 progress events, the result
    // About a megabyte of events, replayed to a reader that reads a chunk, then sleeps.
    const response = await client.resume(ids[1]!); // after the first progress event
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    for (let reads = 1; ; reads++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (reads % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const events = text.split('event: message\n').length - 1;
    const result = text.includes('"result"');
    expect({ events, result }).toEqual({ events: 3_000, result: true });
  });
});
