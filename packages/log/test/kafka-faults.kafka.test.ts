import { KafkaLog } from '@tidemark/kafka';
import {
  decodeStamp,
  ErrorCodes,
  newSessionId,
  newWorkerEpoch,
  requestStreamId,
  StreamCursor,
  topicNames,
  type LogRecord,
  type TidemarkError,
} from '@tidemark/protocol';
import { createTestTopic, startDedicatedBroker } from '@tidemark/kafka-fixtures';
import { describe, expect, inject, it } from 'vitest';
import { PartitionTail, StreamWriter } from '../src/index.js';

const brokers = inject('kafkaBrokers');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  tick?: () => Promise<unknown>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
    if (tick !== undefined) await tick();
  }
}

describe('Kafka faults the log layer must survive or report', () => {
  it('retention (small retention.ms and segment.ms) moves the log start, and a reader behind it hears of the hole', async (ctx) => {
    const topic = await createTestTopic(ctx, {
      brokers,
      label: 'retention',
      configs: { 'retention.ms': '300', 'segment.ms': '100' },
    });
    const log = new KafkaLog({ brokers });
    ctx.onTestFinished(() => log.close());
    await log.append(
      topic,
      Array.from({ length: 5 }, () => ({ partition: 0, key: 's', value: Buffer.from('old') })),
    );
    // Segments roll on the next append after segment.ms; the broker checks retention every second.
    await until(
      async () => (await log.offsets(topic, 0)).logStartOffset >= 5n,
      45_000,
      'retention to delete the old segment',
      () => log.append(topic, [{ partition: 0, key: 's', value: Buffer.from('filler') }]),
    );
    const tail = new PartitionTail({ port: log, topic, partition: 0, maxWaitMs: 100 });
    let error: TidemarkError | undefined;
    tail.subscribe(0n, { onRecords: () => {}, onError: (e) => (error = e) });
    await until(() => error !== undefined, 10_000, 'the reader to hear of the hole');
    expect(error?.code).toBe(ErrorCodes.offsetOutOfRange);
    tail.close();
  });

  it('compaction of a compacted setup removes records of a stream: the seq check catches it as a reset', async (ctx) => {
    // A misconfigured, compacted events topic: every record of a session shares its key.
    const topic = await createTestTopic(ctx, {
      brokers,
      label: 'compacted-events',
      configs: {
        'cleanup.policy': 'compact',
        'segment.ms': '100',
        'min.cleanable.dirty.ratio': '0.01',
        'min.compaction.lag.ms': '0',
      },
    });
    const log = new KafkaLog({ brokers });
    ctx.onTestFinished(() => log.close());
    const names = { ...topicNames('unused.'), events: topic, streams: topic };
    const writer = new StreamWriter({
      port: log,
      topics: names,
      epoch: newWorkerEpoch(),
      partitionCount: 1,
    });
    const session = newSessionId();
    const stream = requestStreamId(1);
    const execution = await writer.begin(session, stream, { previous: undefined });
    for (let i = 1; i <= 5; i++) await execution.send({ i });
    const ours = async () => {
      const result = await log.fetch(topic, 0, 0n);
      return result.records.filter(
        (r) => r.key === session && r.headers.some(([name]) => name === 'tm-stream'),
      );
    };
    await until(
      async () => (await ours()).length < 6,
      45_000,
      'the cleaner to compact the stream',
      () => execution.send({ filler: true }),
    );
    const cursor = new StreamCursor({
      generation: execution.generation,
      nextSeq: 1,
      clientHasEvents: true,
      fromOffset: 0n,
    });
    const steps = (await ours()).flatMap((record: LogRecord) => {
      const stamp = decodeStamp(record.headers);
      return stamp.ok ? [cursor.accept({ offset: record.offset, stamp: stamp.stamp })] : [];
    });
    const first = steps.find((step) => step.kind === 'deliver');
    expect(first?.kind === 'deliver' && first.resetBefore?.reason).toBe('seq-gap');
  });

  it('a tail keeps reading across a broker restart, from its offset, with no gap and no duplicate', async (ctx) => {
    const broker = await startDedicatedBroker();
    ctx.onTestFinished(() => broker.destroy());
    const dedicated = [...broker.brokers];
    const topic = await createTestTopic(ctx, { brokers: dedicated, label: 'restart' });
    const log = new KafkaLog({
      brokers: dedicated,
      connection: { connectTimeout: 2_000, requestTimeout: 5_000 },
    });
    ctx.onTestFinished(() => log.close());
    const seen: bigint[] = [];
    const tail = new PartitionTail({
      port: log,
      topic,
      partition: 0,
      maxWaitMs: 200,
      retryBackoffMs: 100,
    });
    ctx.onTestFinished(() => tail.close());
    tail.subscribe(0n, {
      onRecords: (records) => seen.push(...records.map((r) => r.offset)),
      onError: (e) => seen.push(-1n, BigInt(e.code.length)),
    });
    await log.append(
      topic,
      Array.from({ length: 10 }, () => ({ partition: 0, key: 'k', value: Buffer.from('before') })),
    );
    await until(() => seen.length === 10, 15_000, 'records before the restart');

    await broker.stop();
    await sleep(500);
    await broker.start();
    await until(
      async () => {
        try {
          await log.append(topic, [{ partition: 0, key: 'k', value: Buffer.from('after') }]);
          return true;
        } catch {
          return false;
        }
      },
      60_000,
      'the producer to reach the restarted broker',
    );
    await log.append(
      topic,
      Array.from({ length: 9 }, () => ({ partition: 0, key: 'k', value: Buffer.from('after') })),
    );
    await until(() => seen.length >= 20, 60_000, 'the tail to continue after the restart');
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i)));
  });
});
