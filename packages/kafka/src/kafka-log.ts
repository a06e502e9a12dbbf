import {
  Admin,
  ConnectionPool,
  Consumer,
  Producer,
  type Broker,
  type ClusterMetadata,
  type ProduceResult,
} from '@platformatic/kafka';
import {
  backoffMs,
  ErrorCodes,
  joinParts,
  TidemarkError,
  type AppendRecord,
  type FetchOptions,
  type FetchResult,
  type GroupMembership,
  type GroupPort,
  type JoinGroupOptions,
  type LogIdentity,
  type LogPort,
  type PartitionOffsets,
} from '@tidemark/protocol';
import { needsFreshMetadata, toTidemarkError } from './errors.js';
import { compileKafkaLogOptions, type KafkaLogOptions } from './kafka-log-options.js';
import { joinGroupOf } from './group-join.js';
import { decodeFetch, fetchPartition } from './partition-fetch.js';

/** How long a fetch keeps asking for a partition's leader while a failover happens. */
const FAILOVER_MS = 15_000;

interface TopicMetadata {
  readonly id: string;
  /** The leader broker of each partition. */
  readonly leaders: readonly Broker[];
}

/**
 * The log port on Apache Kafka. Reads are raw partition fetches from an offset (no consumer
 * group, no auto-reset: `OFFSET_OUT_OF_RANGE` is surfaced); writes go through one idempotent
 * producer with `acks=all`.
 */
export class KafkaLog implements LogPort, GroupPort {
  readonly kind = 'kafka';
  private readonly producer: Producer<Buffer, Buffer, Buffer, Buffer>;
  private readonly reader: Consumer;
  private readonly fetchConnections: ConnectionPool;
  /** One connection per partition for long polls: a broker answers one connection's requests in order. */
  private readonly pollConnections = new Map<string, ConnectionPool>();
  private readonly connectionOptions: KafkaLogOptions['connection'];
  private readonly clientId: string;
  private readonly brokers: string[];
  private readonly groupSessionTimeoutMs: number;
  private readonly groupProtocol: 'auto' | 'consumer' | 'classic';
  private readonly onProblem: (problem: string, error?: unknown) => void;
  /** Connections to group coordinators (the consumer protocol's members). */
  private readonly groupConnections: ConnectionPool;
  private readonly admin: Admin;
  private readonly fetchMaxBytes: number;
  private readonly topics = new Map<string, Promise<TopicMetadata>>();
  private clusterId: string | undefined;
  private closed = false;

  constructor(options: KafkaLogOptions) {
    const { clientId, fetchMaxBytes, groupSessionTimeoutMs, groupProtocol, onProblem } =
      compileKafkaLogOptions(options);
    this.groupProtocol = groupProtocol;
    this.onProblem = onProblem;
    this.groupConnections = new ConnectionPool(`${clientId}-group`, options.connection);
    this.fetchMaxBytes = fetchMaxBytes;
    // A leader or controller failover (a broker killed: its session times out, another is elected)
    // takes seconds; every client rides it out instead of failing after the default 3 tries.
    const base = {
      bootstrapBrokers: [...options.brokers],
      retries: 20,
      retryDelay: 500,
      ...options.connection,
    };
    this.producer = new Producer({
      ...base,
      clientId: `${clientId}-producer`,
      idempotent: true,
      acks: -1,
    });
    // A consumer that never joins its group, for metadata only.
    this.reader = new Consumer({
      ...base,
      clientId: `${clientId}-reader`,
      groupId: `${clientId}-unused-reader-group`,
    });
    // Fetches go straight to the partition leader without a fetch session: KIP-227 sessions assume
    // one fetch loop per broker, and tails and catch-up readers fetch concurrently.
    this.fetchConnections = new ConnectionPool(`${clientId}-fetch`, options.connection);
    this.connectionOptions = options.connection;
    this.clientId = clientId;
    this.brokers = [...options.brokers];
    this.groupSessionTimeoutMs = groupSessionTimeoutMs;
    this.admin = new Admin({ ...base, clientId: `${clientId}-admin` });
  }

  async identity(topic: string): Promise<LogIdentity> {
    const metadata = await this.topicMetadata(topic);
    return { clusterId: this.clusterId ?? '', topicId: metadata.id };
  }

  async partitionCount(topic: string): Promise<number> {
    return (await this.topicMetadata(topic)).leaders.length;
  }

  async append(topic: string, records: readonly AppendRecord[]): Promise<bigint[]> {
    this.assertOpen();
    if (records.length === 0) return [];
    const metadata = await this.topicMetadata(topic);
    for (const record of records) this.checkPartition(topic, metadata, record.partition);
    let result: ProduceResult;
    try {
      result = await this.producer.send({
        messages: records.map((record) => ({
          topic,
          partition: record.partition,
          ...(record.key === null ? {} : { key: Buffer.from(record.key) }),
          // A null value is a tombstone on a compacted topic; the client passes it through.
          value: (record.value === null ? null : asBuffer(record.value)) as Buffer,
          headers: new Map(
            // A Map keyed by Buffer objects: a fresh key per header, so repeated names all stay.
            (record.headers ?? []).map(([name, value]) => [Buffer.from(name), Buffer.from(value)]),
          ),
        })),
      });
    } catch (error) {
      if (needsFreshMetadata(error)) this.topics.delete(topic);
      throw toTidemarkError(error, `append to ${topic}`);
    }
    // One send makes one batch per partition, in input order: offsets are the base plus the index.
    const bases = new Map<number, bigint>();
    for (const offset of result.offsets ?? [])
      if (offset.topic === topic) bases.set(offset.partition, BigInt(offset.offset));
    const next = new Map<number, bigint>();
    return records.map((record) => {
      const base = bases.get(record.partition);
      if (base === undefined)
        throw new TidemarkError(
          ErrorCodes.logUnavailable,
          `append to ${topic}/${record.partition}: no offset in the answer`,
        );
      const offset = next.get(record.partition) ?? base;
      next.set(record.partition, offset + 1n);
      return offset;
    });
  }

  async fetch(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options: FetchOptions = {},
  ): Promise<FetchResult> {
    const result = await this.fetchRecords(topic, partition, fromOffset, options);
    // A value written in parts is read whole (the parts before this answer are read back).
    return joinParts(result, (from) => this.fetchRecords(topic, partition, from, { maxWaitMs: 0 }));
  }

  private async fetchRecords(
    topic: string,
    partition: number,
    fromOffset: bigint,
    options: FetchOptions,
  ): Promise<FetchResult> {
    this.assertOpen();
    // fetchMaxBytes is the ceiling: a reader may ask for less.
    const maxBytes = Math.min(options.maxBytes ?? this.fetchMaxBytes, this.fetchMaxBytes);
    let response;
    // A killed leader stays named by metadata until the cluster fences it (seconds): a fetch that
    // finds no broker there asks for fresh metadata and tries again for up to FAILOVER_MS, so
    // readers ride out a failover instead of failing their callers.
    for (let attempt = 0, started = Date.now(); ; attempt++) {
      const metadata = await this.topicMetadata(topic);
      this.checkPartition(topic, metadata, partition);
      try {
        const maxWaitMs = options.maxWaitMs ?? 0;
        const connection = await this.connectionsFor(topic, partition, maxWaitMs).get(
          metadata.leaders[partition] as Broker,
        );
        const at = { topicId: metadata.id, partition, fromOffset };
        response = await fetchPartition(connection, at, maxBytes, maxWaitMs);
        break;
      } catch (error) {
        const fresh = needsFreshMetadata(error);
        if (fresh) this.topics.delete(topic);
        if (!fresh || this.closed || Date.now() - started > FAILOVER_MS)
          throw toTidemarkError(error, `fetch ${topic}/${partition} at ${fromOffset}`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, { maxMs: 1_000 })));
      }
    }
    return decodeFetch(response, topic, partition, fromOffset);
  }

  async offsets(topic: string, partition: number): Promise<PartitionOffsets> {
    this.assertOpen();
    const metadata = await this.topicMetadata(topic);
    this.checkPartition(topic, metadata, partition);
    try {
      const [earliest, latest] = await Promise.all(
        [-2n, -1n].map((timestamp) =>
          this.admin.listOffsets({
            topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp }] }],
          }),
        ),
      );
      const offsetOf = (answer: typeof earliest) =>
        answer?.[0]?.partitions.find((p) => p.partitionIndex === partition)?.offset;
      const logStartOffset = offsetOf(earliest);
      const highWatermark = offsetOf(latest);
      if (logStartOffset === undefined || highWatermark === undefined)
        throw new Error('no offsets in the answer');
      return { logStartOffset, highWatermark };
    } catch (error) {
      throw toTidemarkError(error, `offsets of ${topic}/${partition}`);
    }
  }

  async deleteRecordsBefore(topic: string, partition: number, offset: bigint): Promise<bigint> {
    this.assertOpen();
    try {
      const deleted = await this.admin.deleteRecords({
        topics: [{ name: topic, partitions: [{ partition, offset }] }],
      });
      const low = deleted[0]?.partitions.find((p) => p.partition === partition)?.lowWatermark;
      if (low === undefined) throw new Error('no low watermark in the answer');
      return low;
    } catch (error) {
      throw toTidemarkError(error, `deleteRecords ${topic}/${partition} before ${offset}`);
    }
  }

  /**
   * Joins a consumer group on `topic`, for its assignments and committed offsets (see `GroupPort`):
   * on the consumer protocol unless told `classic` — or the brokers refuse it.
   */
  joinGroup(options: JoinGroupOptions): Promise<GroupMembership> {
    this.assertOpen();
    return joinGroupOf(
      {
        protocol: this.groupProtocol,
        sessionTimeoutMs: this.groupSessionTimeoutMs,
        admin: this.admin,
        connections: this.groupConnections,
        classic: {
          brokers: this.brokers,
          clientId: `${this.clientId}-group`,
          connection: this.connectionOptions,
        },
        topicMetadata: (topic) => this.topicMetadata(topic),
        onProblem: this.onProblem,
      },
      options,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([
      this.groupConnections.close(),
      this.producer.close(),
      this.reader.close(true),
      this.fetchConnections.close(),
      ...[...this.pollConnections.values()].map((pool) => pool.close()),
      this.admin.close(),
    ]);
  }

  /**
   * Immediate reads share one connection; a long poll waits on the broker and would hold up every
   * request behind it on its connection, so each partition's long polls get their own.
   */
  private connectionsFor(topic: string, partition: number, maxWaitMs: number): ConnectionPool {
    if (maxWaitMs <= 0) return this.fetchConnections;
    const key = `${topic}\u0000${partition}`;
    let pool = this.pollConnections.get(key);
    if (pool === undefined) {
      pool = new ConnectionPool(`${this.clientId}-tail`, this.connectionOptions);
      this.pollConnections.set(key, pool);
    }
    return pool;
  }

  /** The cached metadata of a topic: its id and each partition's leader. Dropped on stale-metadata errors. */
  private topicMetadata(topic: string): Promise<TopicMetadata> {
    this.assertOpen();
    let cached = this.topics.get(topic);
    if (cached === undefined) {
      cached = this.loadMetadata(topic);
      this.topics.set(topic, cached);
      cached.catch(() => this.topics.delete(topic));
    }
    return cached;
  }

  private async loadMetadata(topic: string): Promise<TopicMetadata> {
    let metadata: ClusterMetadata;
    try {
      metadata = await this.reader.metadata({ topics: [topic], forceUpdate: true });
    } catch (error) {
      throw toTidemarkError(error, `metadata of ${topic}`);
    }
    this.clusterId = metadata.id;
    const found = metadata.topics.get(topic);
    if (found === undefined)
      throw new TidemarkError(ErrorCodes.unknownTopic, `unknown topic ${topic}`);
    const leaders = found.partitions.map((p) => {
      const broker = metadata.brokers.get(p.leader);
      if (broker === undefined)
        throw new TidemarkError(ErrorCodes.logUnavailable, `${topic}: no leader for a partition`, {
          retryable: true,
        });
      return broker;
    });
    return { id: found.id, leaders };
  }

  private checkPartition(topic: string, metadata: TopicMetadata, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= metadata.leaders.length) {
      throw new TidemarkError(
        ErrorCodes.unknownTopic,
        `topic ${topic} has no partition ${partition}`,
      );
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new TidemarkError(ErrorCodes.closed, 'the Kafka log is closed');
  }
}

/** A record's bytes as the client takes them, without a copy when they already are a Buffer. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes)
    ? bytes
    : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
