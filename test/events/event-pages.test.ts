import events from '@tidemark/examples/events';
import { expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { rpc } from '../support/task-client.js';

// A poll's page is bounded by its bytes, not only by its count (security review L8): a stream of
// large occurrences is read a page of about a megabyte at a time — every occurrence once, in order
// — instead of one answer too large for Kafka's record (17 such occurrences broke every poll).

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
