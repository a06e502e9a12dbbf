import {
  checkSealedRecord,
  createKeyring,
  encodeRequestRecord,
  partitionForSession,
  sealRequestHeaders,
  sealRequestRecord,
  SESSION_ENDED,
  topicNames,
  type SessionId,
} from '@tidemark/protocol';
import { EmbeddedLog } from '@tidemark/embedded-log';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import { replayedRecordsRunOnce } from '@tidemark/fixtures/seal-replay';
import { RawMcpClient } from '@tidemark/fixtures/sse';

// The Kafka trust boundary (issue #33): a worker that holds the gateways' keyring takes only the
// records of `requests` a gateway sealed. Whoever else can write the topic — forging a subject, or
// ending someone's session — is dropped, said and counted; the session it aimed at lives on.

describe('sealed requests', () => {
  it("a record a gateway did not seal is dropped: a forged 'session ended' leaves the session working", async () => {
    const problems: string[] = [];
    const stack = await embeddedStack({
      partitions: 1,
      worker: { onProblem: (problem) => problems.push(problem) },
    });
    onTestFinished(() => stack.stop());
    const client = new RawMcpClient(stack.gateways[0]!.url);
    await client.initialize();
    const session = client.session as SessionId;
    const forged = encodeRequestRecord({ lane: 'control', session, control: SESSION_ENDED });
    const partition = partitionForSession(session, 1);
    const otherSecret = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(9) } });
    const sealedElsewhere = [...forged.headers, sealRequestRecord(otherSecret, forged)];
    // A gateway's own seal, then the record changed under it (another session named).
    const genuine = encodeRequestRecord({
      lane: 'control',
      session: 'a-session-of-someone-else' as SessionId,
      control: SESSION_ENDED,
    });
    const tampered = [...forged.headers, sealRequestRecord(stack.keyring, genuine)];
    await stack.log.append(stack.topics.requests, [
      { ...forged, partition },
      { ...forged, headers: sealedElsewhere, partition },
      { ...forged, headers: tampered, partition },
    ]);
    // Read in order: the call after them is answered only once the worker has been past them.
    const { messages } = await client.callCount(7, 2, 0);
    expect(messages.at(-1)).toMatchObject({ id: 7, result: { content: [{ type: 'text' }] } });
    const unsealed = problems.filter((problem) => problem.includes('no valid gateway seal'));
    expect(unsealed.map((problem) => /\((\w[\w-]*)\)/.exec(problem)?.[1])).toEqual([
      'missing',
      'mismatch',
      'mismatch',
    ]);
  });

  it('a sealed record appended again — on its partition, or on another — runs nothing again (security review M3)', async () => {
    const log = new EmbeddedLog({ path: ':memory:' });
    const topics = topicNames('t.');
    log.provisionTopics(topics, { partitions: 2 });
    await replayedRecordsRunOnce(log, topics);
  });

  it('a seal says where and when: another partition, a time outside the window, a forged time are refused; a seal of the release before is legacy', () => {
    const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
    const record = encodeRequestRecord({
      lane: 'control',
      session: 's' as SessionId,
      control: SESSION_ENDED,
    });
    const headers = [...record.headers, ...sealRequestHeaders(keyring, record, 3, 1_000_000)];
    const read = (changes: object) => ({
      ...record,
      headers,
      partition: 3,
      timestampMs: 1_000_500,
      ...changes,
    });
    expect(checkSealedRecord(keyring, read({}))).toMatchObject({ ok: true, legacy: false });
    expect(checkSealedRecord(keyring, read({ partition: 4 }))).toEqual({
      ok: false,
      problem: 'other-partition',
    });
    expect(checkSealedRecord(keyring, read({ timestampMs: 1_000_000 + 5 * 60_000 + 1 }))).toEqual({
      ok: false,
      problem: 'outside-window',
    });
    const retimed = headers.map(([name, value]) =>
      name === 'tm-sealed-at' ? ([name, '3.1400000'] as const) : ([name, value] as const),
    );
    expect(checkSealedRecord(keyring, read({ headers: retimed }))).toEqual({
      ok: false,
      problem: 'mismatch',
    });
    const legacy = [...record.headers, sealRequestRecord(keyring, record)];
    expect(checkSealedRecord(keyring, read({ headers: legacy }))).toMatchObject({
      ok: true,
      legacy: true,
    });
  });
});
