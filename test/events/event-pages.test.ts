import events from '@tidemark/examples/events';
import { expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { rpc } from '@tidemark/fixtures/task-client';

// A poll's page is bounded by its bytes, not only by its count (security review L8): a stream of
// large occurrences is read a page of about a megabyte at a time — every occurrence once, in order
// — instead of one answer too large for Kafka's record (17 such occurrences broke every poll). And
// its scan is bounded too (M4): a quiet stream on a busy partition is read a stretch at a time.

it('large occurrences are paged by bytes: each page about 1 MiB at most, every occurrence once and in order', async () => {
  const stack = await embeddedStack({ modules: [events] });
  onTestFinished(() => stack.stop());
  const url = stack.gateways[0]!.url;
  const api = { name: 'deployments', arguments: { service: 'api' } };
  let cursor = String((await rpc(url, 'events/poll', api)).body.result!['cursor']);
  const large = (n: number) => `${n}:`.padEnd(200 * 1024, 'x');
  for (let n = 1; n <= 12; n++) {
    const called = await rpc(
      url,
      'tools/call',
      { name: 'record_deployment', arguments: { service: 'api', version: large(n) } },
      { tasks: false },
    );
    expect(JSON.stringify(called.body.result)).toContain('recorded');
  }
  const versions: string[] = [];
  const pageBytes: number[] = [];
  for (let pages = 0; versions.length < 12 && pages < 20; pages++) {
    const { body, text } = await rpc(url, 'events/poll', { ...api, cursor });
    const page = body.result as {
      events: Array<{ data: { version: string } }>;
      cursor: string;
      nextPollMs: number;
    };
    pageBytes.push(Buffer.byteLength(text));
    versions.push(...page.events.map((event) => event.data.version.split(':')[0]!));
    // A page cut by its bytes says there is more now.
    if (versions.length < 12) expect(page.nextPollMs).toBe(0);
    cursor = page.cursor;
  }
  expect(versions).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
  expect(pageBytes.length).toBeGreaterThanOrEqual(3);
  for (const bytes of pageBytes) expect(bytes).toBeLessThan(1.3 * 1024 * 1024);
});

it('a poll of a quiet stream on a busy partition scans a bounded stretch: its cursor goes on from there, and the next occurrence is found (security review M4)', async () => {
  const stack = await embeddedStack({ modules: [events], partitions: 1 });
  onTestFinished(() => stack.stop());
  const url = stack.gateways[0]!.url;
  const api = { name: 'deployments', arguments: { service: 'quiet' } };
  let cursor = String((await rpc(url, 'events/poll', api)).body.result!['cursor']);
  // 25,000 occurrences of other streams on the one partition, then one of this stream's.
  const value = Buffer.from('{}');
  for (let i = 0; i < 25_000; i += 1_000)
    await stack.log.append(
      stack.topics.occurrences,
      Array.from({ length: 1_000 }, (_, j) => ({ partition: 0, key: `ev.other-${i + j}`, value })),
    );
  await rpc(
    url,
    'tools/call',
    { name: 'record_deployment', arguments: { service: 'quiet', version: 'v1' } },
    { tasks: false },
  );
  const pages: Array<{ events: unknown[]; nextPollMs: number }> = [];
  for (let i = 0; i < 5 && !pages.some((page) => page.events.length > 0); i++) {
    const page = (await rpc(url, 'events/poll', { ...api, cursor })).body.result as {
      events: unknown[];
      cursor: string;
      nextPollMs: number;
    };
    pages.push(page);
    cursor = page.cursor;
  }
  // Three bounded scans: two cut short (more now: poll again at once), the third finds it.
  expect(pages.map((page) => page.events.length)).toEqual([0, 0, 1]);
  expect(pages.slice(0, 2).map((page) => page.nextPollMs)).toEqual([0, 0]);
});
