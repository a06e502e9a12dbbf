import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// The gateway's SSE responses: keep-alive comments from one timer for all of them, and a replay
// paced to a slow reader instead of cut when its buffer fills.

const keepAlives = (text: string) => text.split(': keep-alive\n\n').length - 1;

/** A response's text, read until `enough` says so (or it ends). */
async function readUntil(response: Response, enough: (text: string) => boolean): Promise<string> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  while (!enough(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  await reader.cancel().catch(() => undefined);
  return text;
}

describe('SSE responses', () => {
  it('an idle stream gets keep-alive comments; a busy one is left alone', async () => {
    const stack = await embeddedStack({ gateway: { keepAliveMs: 250 } });
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
    // Read until three keep-alives came (ordered by what arrives, not by a clock).
    const idle = await readUntil(response, (text) => keepAlives(text) >= 3);
    controller.abort();
    expect(keepAlives(idle)).toBeGreaterThanOrEqual(3);

    // A call whose progress comes every 20 ms never sits idle for 250 ms: no keep-alive among it
    // (a margin for a loaded machine's pauses, which 100 ms did not leave).
    const call = await client.post({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'count', arguments: { to: 30, delayMs: 20 }, _meta: { progressToken: 'p' } },
    });
    const busy = await readUntil(call, (text) => text.includes('"result"'));
    const progress = busy.split('notifications/progress').length - 1;
    const between = busy.slice(busy.indexOf('notifications/progress'), busy.indexOf('"result"'));
    expect({ progress, keepAlives: keepAlives(between) }).toEqual({ progress: 30, keepAlives: 0 });
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
