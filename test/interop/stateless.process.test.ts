import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { EmbeddedLog } from '@tidemark/embedded-log';
import counting from '@tidemark/examples/counting';
import interactive from '@tidemark/examples/interactive';
import { decodeStamp } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { pythonWithMcp } from '../support/prerequisites.js';
import { supportScript } from '../support/processes.js';

async function setup() {
  const stack = await embeddedStack();
  onTestFinished(() => stack.stop());
  return { log: stack.log, topics: stack.topics, url: stack.gateways[0]!.url };
}

async function modernClient(url: string) {
  const client = new Client(
    { name: 'modern-client', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  onTestFinished(() => client.close());
  return client;
}

/** Kinds of the records in `events` (both partitions), to see what the worker wrote. */
async function eventKinds(log: EmbeddedLog, topic: string) {
  const kinds: string[] = [];
  for (const partition of [0, 1]) {
    const { records } = await log.fetch(topic, partition, 0n);
    for (const record of records) {
      const stamp = decodeStamp(record.headers);
      if (stamp.ok) kinds.push(stamp.stamp.kind);
    }
  }
  return kinds;
}

describe('the modern lane (2026-07-28): stateless, no sessions', () => {
  it('serves the official client pinned to 2026-07-28 through the log: list, call with exact progress and result', async () => {
    const { url } = await setup();
    const client = await modernClient(url);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['count', 'flaky_count']);
    const progress: number[] = [];
    const result = await client.callTool(
      { name: 'count', arguments: { to: 12, delayMs: 0 } },
      { onprogress: (p) => void progress.push(p.progress) },
    );
    expect(progress).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(result.content).toEqual([
      { type: 'text', text: Array.from({ length: 12 }, (_, i) => i + 1).join(',') },
    ]);
  });

  it('closing the response stream cancels the call: the tool stops and its stream ends with a terminal record', async () => {
    const { log, topics, url } = await setup();
    const client = await modernClient(url);
    const controller = new AbortController();
    let seen = 0;
    const call = client.callTool(
      { name: 'count', arguments: { to: 1000, delayMs: 20 } },
      { signal: controller.signal, onprogress: () => void seen++ },
    );
    while (seen < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await expect(call).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await eventKinds(log, topics.events);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const later = await eventKinds(log, topics.events);
    expect(later).toEqual(after); // nothing more is written: the tool stopped
    expect(after.filter((k) => k === 'terminal').length).toBeGreaterThanOrEqual(2); // tools/list and the cancelled call
    expect(after.filter((k) => k === 'message').length).toBeLessThan(20);
  });

  it('GET and DELETE from a 2026-07-28 client → 405', async () => {
    const { url } = await setup();
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(url, {
        method,
        headers: { Accept: 'text/event-stream', 'MCP-Protocol-Version': '2026-07-28' },
      });
      expect(response.status).toBe(405);
    }
  });

  it('serves the official Python client (mcp on PyPI), unmodified: it probes server/discover, adopts 2026-07-28, lists, calls with exact progress, answers input through its elicitation callback', async () => {
    const stack = await embeddedStack({ modules: [counting, interactive] });
    onTestFinished(() => stack.stop());
    const { stdout } = await promisify(execFile)(
      pythonWithMcp(),
      [supportScript('python_modern_client.py'), stack.gateways[0]!.url],
      { timeout: 60_000 },
    );
    expect(JSON.parse(stdout)).toEqual({
      protocolVersion: '2026-07-28',
      tools: ['confirm_delete', 'confirm_deploy', 'count', 'export_report', 'flaky_count'],
      count: '1,2,3,4,5',
      progress: [1, 2, 3, 4, 5],
      asked: ['Deploy to staging?'],
      deploy: 'deployed to staging',
    });
  });
});
