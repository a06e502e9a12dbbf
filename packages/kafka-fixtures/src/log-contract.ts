import { ErrorCodes, type LogPort } from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';

/** What a contract run needs from an implementation: a port and fresh topics on it. */
export interface LogContractSubject {
  readonly port: LogPort;
  /** Creates a fresh, empty topic and returns its name. */
  readonly createTopic: (options: { partitions: number; compacted?: boolean }) => Promise<string>;
  /**
   * Makes the implementation compact a compacted topic's partition until `done` holds. It may append
   * records with key `filler` (Kafka only cleans rolled segments); readers of the contract ignore them.
   */
  readonly compactUntil: (
    topic: string,
    partition: number,
    done: () => Promise<boolean>,
  ) => Promise<void>;
}

const text = (value: Uint8Array | null) => (value === null ? null : Buffer.from(value).toString());
const bytes = (value: string) => Buffer.from(value);

type Case = (subject: () => Promise<LogContractSubject>) => Promise<void>;

/** Each case of the contract, by the name it runs under. */
const CASES: Record<string, Case> = {
  'appends in order and reads back keys, values and headers by offset': async (subject) => {
    const { port, createTopic } = await subject();
    const topic = await createTopic({ partitions: 2 });
    const offsets = await port.append(topic, [
      { partition: 1, key: 'k', value: bytes('a'), headers: [['h', '1']] },
      { partition: 1, key: 'k', value: bytes('b') },
      { partition: 0, key: null, value: bytes('other') },
      {
        partition: 1,
        key: 'k2',
        value: null,
        headers: [
          ['x', 'y'],
          ['x', 'z'],
        ],
      },
    ]);
    expect(offsets).toEqual([0n, 1n, 0n, 2n]);
    const result = await port.fetch(topic, 1, 1n);
    expect(result.records.map((r) => [r.offset, r.key, text(r.value), r.headers])).toEqual([
      [1n, 'k', 'b', []],
      [
        2n,
        'k2',
        null,
        [
          ['x', 'y'],
          ['x', 'z'],
        ],
      ],
    ]);
    expect(result).toMatchObject({ logStartOffset: 0n, highWatermark: 3n, nextOffset: 3n });
    expect(result.records[0]!.timestampMs).toBeGreaterThan(Date.now() - 60_000);
    expect(await port.offsets(topic, 0)).toEqual({ logStartOffset: 0n, highWatermark: 1n });
    expect(await port.partitionCount(topic)).toBe(2);
  },

  'long-polls at the tail: answers empty after the wait, or as soon as a record arrives': async (
    subject,
  ) => {
    const { port, createTopic } = await subject();
    const topic = await createTopic({ partitions: 1 });
    const started = Date.now();
    const empty = await port.fetch(topic, 0, 0n, { maxWaitMs: 200 });
    expect(empty.records).toEqual([]);
    expect(empty.nextOffset).toBe(0n);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    const waiting = port.fetch(topic, 0, 0n, { maxWaitMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await port.append(topic, [{ partition: 0, key: 'k', value: bytes('late') }]);
    const arrived = await waiting;
    expect(arrived.records.map((r) => text(r.value))).toEqual(['late']);
  },

  'answers concurrent fetches of one partition at different offsets, each on its own': async (
    subject,
  ) => {
    const { port, createTopic } = await subject();
    const topic = await createTopic({ partitions: 1 });
    await port.append(
      topic,
      Array.from({ length: 30 }, (_, i) => ({ partition: 0, key: 'k', value: bytes(`v${i}`) })),
    );
    // A long poll at the tail in flight while readers fetch lower offsets (tails and catch-ups do).
    const polling = port.fetch(topic, 0, 30n, { maxWaitMs: 2_000 });
    const answers = await Promise.all(
      [0, 5, 10, 15, 20, 25, 29].map((from) => port.fetch(topic, 0, BigInt(from))),
    );
    expect(answers.map((a) => a.records[0]?.offset)).toEqual([0n, 5n, 10n, 15n, 20n, 25n, 29n]);
    expect(answers.map((a) => a.records.at(-1)?.offset)).toEqual(Array(7).fill(29n));
    await port.append(topic, [{ partition: 0, key: 'k', value: bytes('v30') }]);
    expect((await polling).records.map((r) => text(r.value))).toEqual(['v30']);
  },

  'moves the log start with deleteRecordsBefore and refuses reads outside [log start, high watermark]':
    async (subject) => {
      const { port, createTopic } = await subject();
      const topic = await createTopic({ partitions: 1 });
      await port.append(
        topic,
        Array.from({ length: 10 }, (_, i) => ({ partition: 0, key: 'k', value: bytes(`v${i}`) })),
      );
      expect(await port.deleteRecordsBefore(topic, 0, 6n)).toBe(6n);
      expect(await port.offsets(topic, 0)).toEqual({ logStartOffset: 6n, highWatermark: 10n });
      const held = await port.fetch(topic, 0, 6n);
      expect(held.records.map((r) => text(r.value))).toEqual(['v6', 'v7', 'v8', 'v9']);
      expect(held.logStartOffset).toBe(6n);
      await expect(port.fetch(topic, 0, 2n)).rejects.toMatchObject({
        code: ErrorCodes.offsetOutOfRange,
      });
      await expect(port.fetch(topic, 0, 11n)).rejects.toMatchObject({
        code: ErrorCodes.offsetOutOfRange,
      });
      const atTail = await port.fetch(topic, 0, 10n);
      expect(atTail.records).toEqual([]);
    },

  'names each topic’s log distinctly and stably': async (subject) => {
    const { port, createTopic } = await subject();
    const a = await createTopic({ partitions: 1 });
    const b = await createTopic({ partitions: 1 });
    const idA = await port.identity(a);
    expect(await port.identity(a)).toEqual(idA);
    const idB = await port.identity(b);
    expect(idB.clusterId).toBe(idA.clusterId);
    expect(idB.topicId).not.toBe(idA.topicId);
  },

  'refuses an unknown topic or partition with a typed error': async (subject) => {
    const { port, createTopic } = await subject();
    const topic = await createTopic({ partitions: 1 });
    await expect(port.fetch(topic, 5, 0n)).rejects.toMatchObject({
      code: expect.stringMatching(/^TIDEMARK_/) as unknown,
    });
    await expect(
      port.append('tm-test-no-such-topic', [{ partition: 0, key: null, value: null }]),
    ).rejects.toMatchObject({
      code: expect.stringMatching(/^TIDEMARK_/) as unknown,
    });
  },

  'compaction keeps the latest record per key and leaves offset gaps that reads skip': async (
    subject,
  ) => {
    const { port, createTopic, compactUntil } = await subject();
    const topic = await createTopic({ partitions: 1, compacted: true });
    await port.append(topic, [
      { partition: 0, key: 'a', value: bytes('a1') },
      { partition: 0, key: 'b', value: bytes('b1') },
      { partition: 0, key: 'a', value: bytes('a2') },
      { partition: 0, key: 'c', value: bytes('c1') },
    ]);
    const ours = async () =>
      (await port.fetch(topic, 0, 0n)).records.filter((r) => r.key !== 'filler');
    await compactUntil(topic, 0, async () => (await ours()).length === 3);
    const read = await port.fetch(topic, 0, 0n);
    expect((await ours()).map((r) => [r.offset, text(r.value)])).toEqual([
      [1n, 'b1'],
      [2n, 'a2'],
      [3n, 'c1'],
    ]);
    expect(read.logStartOffset).toBe(0n);
  },
};

/**
 * The log port contract: the semantics Tidemark relies on, run unchanged against every
 * implementation (the embedded log and Kafka). `subject` is called once per test.
 */
export function describeLogPortContract(
  name: string,
  subject: () => Promise<LogContractSubject>,
): void {
  describe(`log port contract: ${name}`, () => {
    for (const [title, run] of Object.entries(CASES)) it(title, () => run(subject));
  });
}
