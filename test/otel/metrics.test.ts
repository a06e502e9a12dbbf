import { metrics } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { StreamHeadStore } from '@tidemark/log';
import { requestStreamId, type SessionId } from '@tidemark/protocol';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
beforeAll(() => {
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
});

/** The current data points of a metric, as attributes → value. */
async function points(
  name: string,
): Promise<Array<{ attributes: Record<string, unknown>; value: unknown }>> {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []).map((p: DataPoint<unknown>) => ({
    attributes: p.attributes,
    value: p.value,
  }));
}

/** The sum of a metric's data points (an up-down counter over its attributes). */
async function value(name: string): Promise<number> {
  return (await points(name)).reduce((sum, p) => sum + (p.value as number), 0);
}

/** How many values a histogram has recorded. */
async function histogramCount(name: string): Promise<number> {
  return (await points(name)).reduce((sum, p) => sum + (p.value as { count: number }).count, 0);
}

describe('metrics operators need', () => {
  it('count resumes, replay lengths, deliveries, queue waits, tool runs and retries, sessions, streams and tail readers by exactly what happened', async () => {
    const stack = await embeddedStack();
    onTestFinished(() => stack.stop());
    const client = new Client({ name: 'metered', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.gateways[0]!.url)));
    onTestFinished(() => client.close());
    const result = await client.callTool({
      name: 'flaky_count',
      arguments: { to: 3, delayMs: 0, failAt: 2, failAttempts: 1 },
    });
    expect(result.content).toEqual([{ type: 'text', text: '1,2,3' }]);

    expect(await points('tidemark.tool.retries')).toEqual([
      { attributes: { 'gen_ai.tool.name': 'flaky_count' }, value: 1 },
    ]);
    const durations = await points('tidemark.tool.duration');
    const byOutcome: Record<string, number> = {};
    for (const d of durations)
      byOutcome[d.attributes['error.type'] === undefined ? 'ok' : 'tool_error'] = (
        d.value as { count: number }
      ).count;
    expect(byOutcome).toEqual({ ok: 1, tool_error: 1 });

    const raw = new RawMcpClient(stack.gateways[0]!.url);
    await raw.initialize();
    expect(await value('tidemark.worker.live_sessions')).toBe(2);
    const lagBefore = await histogramCount('tidemark.delivery.lag');
    await raw.callCount(6, 3, 0);
    // Live deliveries: three progress events and the result.
    expect((await histogramCount('tidemark.delivery.lag')) - lagBefore).toBe(4);
    const { ids } = await raw.callCount(7, 4, 10, 2);
    // The call runs to its end while nobody listens; then the resume replays 3, 4 and the result.
    const heads = new StreamHeadStore({ port: stack.log, topics: stack.topics, partitionCount: 2 });
    while ((await heads.get(raw.session as SessionId, requestStreamId(7)))?.terminal === undefined)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await (await raw.resume(ids.at(-1)!)).text();
    expect(await points('tidemark.resume.replay_length')).toMatchObject([
      { value: { count: 1, sum: 3 } },
    ]);
    // Every request waited in `requests`: two initialize and three tools/call.
    expect(await histogramCount('tidemark.worker.request_queue_lag')).toBe(5);
    await (await raw.resume(`${ids.at(-1)!.slice(0, -4)}AAAA`)).text();
    const outcomes = (await points('tidemark.resume.outcomes')).map((p) => [
      p.attributes['tidemark.resume.outcome'],
      p.attributes['tidemark.resume.reason'],
      p.value,
    ]);
    expect(outcomes).toEqual(
      expect.arrayContaining([
        ['resume', 'contiguous', 1],
        ['invalid', 'mac-mismatch', 1],
      ]),
    );
    expect(outcomes).toHaveLength(2);
    // The client's standalone GET stream is live while it is connected; when it leaves, none is.
    const liveStreams = async (expected: number) => {
      const deadline = Date.now() + 5_000;
      while (
        (await points('tidemark.gateway.live_streams'))[0]?.value !== expected &&
        Date.now() < deadline
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return (await points('tidemark.gateway.live_streams'))[0]?.value;
    };
    expect(await liveStreams(1)).toBe(1);
    expect(await value('tidemark.gateway.tail_readers')).toBe(1);
    await client.close();
    expect(await liveStreams(0)).toBe(0);
    expect(await value('tidemark.gateway.tail_readers')).toBe(0);
  });
});

describe('refusals', () => {
  it('count every 4xx by status and the limit or check that refused it', async () => {
    const stack = await embeddedStack({ partitions: 1, gateway: { maxBodyBytes: 1_000 } });
    onTestFinished(() => stack.stop());
    const url = stack.gateways[0]!.url;
    const post = (body: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body,
      });
    const before = await points('tidemark.gateway.refusals');
    const count = (list: typeof before, status: number, reason: string) =>
      (list.find(
        (p) =>
          p.attributes['http.response.status_code'] === status &&
          p.attributes['tidemark.refusal.reason'] === reason,
      )?.value as number | undefined) ?? 0;
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"x","extra":1}')).status).toBe(400);
    expect((await post('x'.repeat(2_000))).status).toBe(413);
    const after = await points('tidemark.gateway.refusals');
    expect(count(after, 400, 'invalid-request') - count(before, 400, 'invalid-request')).toBe(1);
    expect(count(after, 413, 'body-size') - count(before, 413, 'body-size')).toBe(1);
  });
});
