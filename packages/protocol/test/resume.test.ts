import { describe, expect, it } from 'vitest';
import {
  decideResume,
  foldStreamHead,
  verifyEventId,
  type Generation,
  type ResumeInput,
  type StampedRecord,
  type StreamHead,
} from '../src/index.js';
import {
  epochA,
  epochB,
  gen,
  generationRecords,
  idFor,
  keyring,
  log,
  otherSession,
  session,
} from './helpers.js';

function headOf(records: StampedRecord<string>[]): StreamHead<string> | undefined {
  let head: StreamHead<string> | undefined;
  for (const record of records) head = foldStreamHead(head, record).head;
  return head;
}

function decide(lastEventId: string, over: Partial<ResumeInput<string>> = {}) {
  return decideResume<string>({
    claim: verifyEventId(lastEventId, { session, keyring, nowMs: 0 }),
    logIdentity: log,
    partition: 0,
    logStartOffset: 0n,
    highWatermark: 1000n,
    head: undefined,
    ...over,
  });
}

const claimOf = (generation: Generation, offset: bigint, seq: number) =>
  idFor({ generation, offset, seq });
const g1 = gen(epochA, 1);
const g2 = gen(epochB, 2);

describe('decideResume: the seed’s observed failures come out as reset, with the reason', () => {
  it('worker failover: the new worker’s counter restarts, the claim "47" of the old worker is not replayed from the beginning', () => {
    // Worker A sent events 1..47; worker B took over and has sent 1..12 of its own execution.
    const a = generationRecords(g1, 0n, 47);
    const b = generationRecords(g2, 48n, 12);
    const head = headOf([...a, ...b]);
    const decision = decide(claimOf(g1, 47n, 47), { head, highWatermark: 61n });
    expect(decision).toMatchObject({
      outcome: 'reset',
      reason: 'generation-superseded',
      generation: g2,
    });
    // The client is sent B's stream from its start, as a new stream, not appended to A's 1..47.
    expect(decision.outcome === 'reset' && decision.plan).toEqual({
      kind: 'read',
      fromOffset: 48n,
      generation: g2,
      nextSeq: 1,
      clientHasEvents: false,
    });
  });

  it('retried invocation on the same worker: the claim matches a different execution’s event 47', () => {
    const retry = gen(epochA, 2);
    const first = generationRecords(g1, 0n, 50);
    const second = generationRecords(retry, 51n, 60);
    const head = headOf([...first, ...second]);
    const decision = decide(claimOf(g1, 47n, 47), { head, highWatermark: 112n });
    expect(decision).toMatchObject({
      outcome: 'reset',
      reason: 'generation-superseded',
      generation: retry,
    });
  });
});

describe('decideResume: every row of the design table', () => {
  const records = generationRecords(g1, 10n, 5);
  const head = headOf(records);

  it('resume: same generation, no hole, claim within the tail', () => {
    expect(decide(claimOf(g1, 12n, 2), { head, highWatermark: 16n })).toEqual({
      outcome: 'resume',
      reason: 'contiguous',
      stream: 'n7',
      plan: { kind: 'read', fromOffset: 13n, generation: g1, nextSeq: 3, clientHasEvents: true },
    });
  });

  it('resume: a finished stream the client has completely ends at once', () => {
    const done = headOf(generationRecords(g1, 10n, 5, true));
    expect(decide(claimOf(g1, 15n, 5), { head: done, highWatermark: 16n })).toMatchObject({
      outcome: 'resume',
      reason: 'complete',
      plan: { kind: 'none' },
    });
  });

  it('resume: a head not yet folded up to the claim trusts the MAC and leaves checking to the read', () => {
    const stale = headOf(records.slice(0, 1));
    expect(decide(claimOf(g1, 14n, 4), { head: stale, highWatermark: 16n })).toMatchObject({
      outcome: 'resume',
      reason: 'contiguous',
    });
    expect(decide(claimOf(g2, 14n, 1), { head: stale, highWatermark: 16n })).toMatchObject({
      outcome: 'resume',
      reason: 'contiguous',
    });
    expect(decide(claimOf(g1, 14n, 4), { head: undefined, highWatermark: 16n })).toMatchObject({
      outcome: 'resume',
      reason: 'contiguous',
    });
  });

  it('resume from a priming id: the stream from its first record, under the current generation', () => {
    const priming = idFor({ offset: 8n });
    expect(decide(priming, { head, highWatermark: 16n })).toMatchObject({
      outcome: 'resume',
      reason: 'from-priming',
      plan: { kind: 'read', fromOffset: 10n, generation: g1, nextSeq: 1, clientHasEvents: false },
    });
    expect(decide(priming, { head: undefined, highWatermark: 8n })).toMatchObject({
      outcome: 'resume',
      reason: 'from-priming',
      plan: { kind: 'read', fromOffset: 8n, generation: undefined, nextSeq: 1 },
    });
  });

  it('reset: offset below the log start offset (eviction hole)', () => {
    expect(
      decide(claimOf(g1, 11n, 1), { head, highWatermark: 16n, logStartOffset: 14n }),
    ).toMatchObject({
      outcome: 'reset',
      reason: 'evicted',
      generation: g1,
      plan: { kind: 'read', fromOffset: 14n, generation: g1, nextSeq: undefined },
    });
    expect(
      decide(claimOf(g1, 13n, 3), { head, highWatermark: 16n, logStartOffset: 14n }).outcome,
    ).toBe('resume');
  });

  it('reset: a seq gap the head already knows of (compaction)', () => {
    const compacted = headOf([records[0]!, records[1]!, records[2]!, records[5]!]);
    expect(decide(claimOf(g1, 11n, 1), { head: compacted, highWatermark: 16n })).toMatchObject({
      outcome: 'reset',
      reason: 'seq-gap',
      plan: { kind: 'read', fromOffset: 15n, generation: g1, nextSeq: 5 },
    });
  });

  it('reset: terminal stream whose events were evicted sends the final response kept in the head', () => {
    const done = headOf(generationRecords(g1, 10n, 5, true));
    expect(
      decide(claimOf(g1, 12n, 2), { head: done, highWatermark: 16n, logStartOffset: 16n }),
    ).toMatchObject({
      outcome: 'reset',
      reason: 'terminal-evicted',
      plan: { kind: 'final', generation: g1, terminal: { seq: 5, offset: 15n, payload: 'a1:5' } },
    });
    expect(
      decide(idFor({ offset: 9n }), { head: done, highWatermark: 16n, logStartOffset: 16n }),
    ).toMatchObject({
      outcome: 'reset',
      reason: 'terminal-evicted',
    });
  });

  it('reset: the log was replaced (another cluster or a recreated topic), or the session’s partition moved', () => {
    expect(
      decide(claimOf(g1, 12n, 2), {
        head,
        logIdentity: { clusterId: 'cluster-b', topicId: 'topic-events-1' },
      }),
    ).toMatchObject({ outcome: 'reset', reason: 'log-replaced', generation: g1 });
    expect(decide(claimOf(g1, 12n, 2), { head, partition: 3 })).toMatchObject({
      outcome: 'reset',
      reason: 'log-replaced',
    });
    expect(
      decide(claimOf(g1, 12n, 2), {
        head: undefined,
        logIdentity: { clusterId: 'x', topicId: 'y' },
        logStartOffset: 4n,
      }),
    ).toMatchObject({
      outcome: 'reset',
      generation: undefined,
      plan: { kind: 'read', fromOffset: 4n, generation: undefined },
    });
  });

  it('reset: priming id whose generation start was evicted; invalid with no head and the records gone (the result expired: nothing will come)', () => {
    expect(
      decide(idFor({ offset: 8n }), { head, highWatermark: 16n, logStartOffset: 12n }),
    ).toMatchObject({ outcome: 'reset', reason: 'evicted' });
    expect(
      decide(idFor({ offset: 8n }), { head: undefined, highWatermark: 16n, logStartOffset: 12n }),
    ).toMatchObject({ outcome: 'invalid', reason: 'unknown-stream' });
  });

  it.each([
    ['malformed', 'not-an-id'],
    ['other-session', idFor({ offset: 12n, generation: g1, seq: 2 }, otherSession)],
  ])('invalid: %s', (reason, raw) => {
    expect(decide(raw, { head })).toMatchObject({ outcome: 'invalid', reason });
  });

  it('invalid: MAC mismatch', () => {
    const bytes = Buffer.from(claimOf(g1, 12n, 2), 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
    expect(decide(bytes.toString('base64url'), { head })).toMatchObject({
      outcome: 'invalid',
      reason: 'mac-mismatch',
    });
  });

  it('invalid: beyond the tail, by offset, by seq, or past the final seq', () => {
    expect(decide(claimOf(g1, 16n, 6), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'beyond-tail',
    });
    expect(decide(claimOf(g1, 15n, 9), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'beyond-tail',
    });
    expect(decide(idFor({ offset: 17n }), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'beyond-tail',
    });
    const done = headOf(generationRecords(g1, 10n, 5, true));
    expect(decide(claimOf(g1, 15n, 6), { head: done, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'beyond-tail',
    });
  });

  it('invalid: a generation never issued for the stream', () => {
    expect(decide(claimOf(gen(epochA, 7), 12n, 2), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'unknown-generation',
    });
    expect(decide(claimOf(gen(epochB, 1), 12n, 2), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'unknown-generation',
    });
    const stale = headOf(records.slice(0, 1));
    expect(
      decide(claimOf(g2, 12n, 1), { head: stale, highWatermark: 16n, logStartOffset: 14n }),
    ).toMatchObject({ outcome: 'invalid', reason: 'unknown-generation' });
  });

  it('invalid: positions that contradict the stream, or a stream nothing is known of whose events are gone', () => {
    expect(decide(claimOf(g1, 5n, 1), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'position-mismatch',
    });
    expect(decide(idFor({ offset: 12n }), { head, highWatermark: 16n })).toMatchObject({
      outcome: 'invalid',
      reason: 'position-mismatch',
    });
    expect(
      decide(claimOf(g1, 12n, 2), { head: undefined, highWatermark: 16n, logStartOffset: 15n }),
    ).toMatchObject({ outcome: 'invalid', reason: 'unknown-stream' });
  });
});
