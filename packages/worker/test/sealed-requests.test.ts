import {
  createKeyring,
  encodeRequestRecord,
  partitionForSession,
  sealRequestRecord,
  SESSION_ENDED,
  type SessionId,
} from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { embeddedStack } from '../../../test/support/embedded-stack.js';
import { RawMcpClient } from '../../../test/support/sse.js';

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
});
