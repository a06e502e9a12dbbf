import { Admin, Consumer, Producer, stringSerializers } from '@platformatic/kafka';
import { createTestTopic } from '@tidemark/kafka-fixtures';
import { describe, expect, inject, it } from 'vitest';

// The foundation's proof that every test run has a real broker: create a topic, produce, read by
// offset with a raw fetch (no consumer group), and move the log start offset with deleteRecords,
// the primitive later suites use to make eviction holes.
describe('real Kafka broker', () => {
  const brokers = inject('kafkaBrokers');

  it('creates a topic, produces, fetches by offset and moves the log start with deleteRecords', async (ctx) => {
    const topic = await createTestTopic(ctx, { brokers, label: 'broker-smoke' });

    const producer = new Producer({
      clientId: 'smoke-producer',
      bootstrapBrokers: brokers,
      serializers: stringSerializers,
      idempotent: true,
    });
    ctx.onTestFinished(() => producer.close());
    await producer.send({
      messages: Array.from({ length: 10 }, (_, i) => ({
        topic,
        key: 'k',
        value: `v${i}`,
        partition: 0,
      })),
    });

    const consumer = new Consumer({
      clientId: 'smoke-reader',
      groupId: 'unused',
      bootstrapBrokers: brokers,
    });
    ctx.onTestFinished(() => consumer.close());
    const metadata = await consumer.metadata({ topics: [topic] });
    const topicMetadata = metadata.topics.get(topic);
    expect(topicMetadata).toBeDefined();
    const leader = topicMetadata!.partitions[0]!.leader;

    const fetchFrom = async (offset: bigint) => {
      const response = await consumer.fetch({
        node: leader,
        maxWaitTime: 100,
        topics: [
          {
            topicId: topicMetadata!.id,
            partitions: [
              {
                partition: 0,
                currentLeaderEpoch: -1,
                fetchOffset: offset,
                lastFetchedEpoch: -1,
                partitionMaxBytes: 1 << 20,
              },
            ],
          },
        ],
      });
      const partition = response.responses[0]!.partitions[0]!;
      const values = (partition.records ?? []).flatMap((batch) =>
        batch.records.map((record) => ({
          offset: batch.firstOffset + BigInt(record.offsetDelta),
          value: record.value?.toString(),
        })),
      );
      return { partition, values: values.filter((record) => record.offset >= offset) };
    };

    const fromFour = await fetchFrom(4n);
    expect(fromFour.partition.errorCode).toBe(0);
    expect(fromFour.partition.highWatermark).toBe(10n);
    expect(fromFour.partition.logStartOffset).toBe(0n);
    expect(fromFour.values.map((record) => record.value)).toEqual([
      'v4',
      'v5',
      'v6',
      'v7',
      'v8',
      'v9',
    ]);

    const admin = new Admin({ clientId: 'smoke-admin', bootstrapBrokers: brokers });
    ctx.onTestFinished(() => admin.close());
    const deleted = await admin.deleteRecords({
      topics: [{ name: topic, partitions: [{ partition: 0, offset: 6n }] }],
    });
    expect(deleted[0]!.partitions[0]!.lowWatermark).toBe(6n);

    const afterDelete = await fetchFrom(6n);
    expect(afterDelete.partition.logStartOffset).toBe(6n);
    expect(afterDelete.values.map((record) => record.value)).toEqual(['v6', 'v7', 'v8', 'v9']);

    // Reading below the new log start is an error the reader must surface, not skip over.
    const belowStart: unknown = await fetchFrom(2n).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(belowStart).toBeInstanceOf(AggregateError);
    expect((belowStart as AggregateError).errors[0]).toMatchObject({
      apiId: 'OFFSET_OUT_OF_RANGE',
    });
  });
});
