import {
  encodeRequestRecord,
  partitionForSession,
  REQUEST_RECORD_VERSION_HEADER,
  sealRequestHeaders,
  type SessionId,
} from '@tidemark/protocol';
import { readRange } from '@tidemark/log';
import { expect, it, onTestFinished, vi } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// Records nobody can read (issue #56): a sealed request record this worker cannot decode — a newer
// release's version, or a value that is not JSON — is said, counted and skipped with its offset
// committed; when its request can still be told, it is answered with an error (its client is not
// left waiting); and the next request of the partition is served.

it('an unreadable request record is answered with an error when it can be, skipped when not, and the partition goes on', async () => {
  const problems: string[] = [];
  const stack = await embeddedStack({
    partitions: 1,
    worker: { onProblem: (problem) => problems.push(problem) },
  });
  onTestFinished(() => stack.stop());
  const client = new RawMcpClient(stack.gateways[0]!.url);
  await client.initialize();
  const session = client.session as SessionId;
  const partition = partitionForSession(session, 1);
  const sealed = (record: ReturnType<typeof encodeRequestRecord>) => ({
    ...record,
    partition,
    headers: [...record.headers, ...sealRequestHeaders(stack.keyring, record, partition)],
  });
  const message = { jsonrpc: '2.0', id: 'from-the-future', method: 'tools/list' };
  const encoded = encodeRequestRecord({ lane: 'session', session, message, share: 's' });
  const newer = {
    ...encoded,
    headers: encoded.headers
      .filter(([name]) => name !== REQUEST_RECORD_VERSION_HEADER)
      .concat([[REQUEST_RECORD_VERSION_HEADER, '99']]),
  };
  const garbage = { ...encoded, value: Buffer.from('not json') };
  await stack.log.append(stack.topics.requests, [sealed(newer), sealed(garbage)]);
  // The next request is served: the worker went past both.
  const { messages } = await client.callCount(7, 2, 0);
  expect(messages.at(-1)).toMatchObject({ id: 7, result: { content: [{ type: 'text' }] } });
  expect(problems.filter((problem) => problem.includes('skipped'))).toHaveLength(2);
  // The one whose request could be told was answered, on its stream, with why.
  await vi.waitFor(async () => {
    const { highWatermark } = await stack.log.offsets(stack.topics.events, partition);
    const answers: unknown[] = [];
    for await (const record of readRange(stack.log, stack.topics.events, partition, {
      from: 0n,
      until: highWatermark,
      key: session,
    }))
      if (record.value !== null) answers.push(JSON.parse(Buffer.from(record.value).toString()));
    const answer = answers.find((a) => (a as { id?: unknown }).id === 'from-the-future') as
      { error?: { code: number; message: string } } | undefined;
    expect(answer?.error?.code).toBe(-32600);
    expect(answer?.error?.message).toMatch(
      /cannot read the request's record \(request record version 99/,
    );
  });
});
