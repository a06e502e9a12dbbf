// Log layer benchmark: tail and catch-up read throughput, and the catch-up → live handover latency,
// on the embedded log (memory and file) and on Kafka. Prints a table and writes JSON.
//
//   npm run bench:log                      # sizes for a real measurement
//   npm run bench:log -- --records 2000    # a smoke run
//
// Kafka comes from KAFKA_BROKERS, or the local broker (infra/kafka, started and stopped here).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EmbeddedLog } from '@tidemark/embedded-log';
import { KafkaLog, provisionTopics } from '@tidemark/kafka';
import { PartitionTail } from '@tidemark/log';
import { topicNames, type LogPort, type LogRecord } from '@tidemark/protocol';
import { resolveKafka } from '@tidemark/kafka-fixtures';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '50000' },
    'value-bytes': { type: 'string', default: '200' },
    only: { type: 'string' },
    out: { type: 'string', default: 'test/bench/results/log-bench.json' },
  },
});
const records = Number(values.records);
const valueBytes = Number(values['value-bytes']);
const value = Buffer.alloc(valueBytes, 'x');

interface Row {
  log: string;
  records: number;
  appendPerSec: number;
  tailReadPerSec: number;
  catchUpReadPerSec: number;
  handoverMs: { p50: number; p99: number; max: number };
  liveLatencyMs: { p50: number; p99: number };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const round = (n: number) => Math.round(n * 100) / 100;

async function fill(port: LogPort, topic: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < records; i += 500) {
    const n = Math.min(500, records - i);
    await port.append(
      topic,
      Array.from({ length: n }, () => ({ partition: 0, key: 'bench', value })),
    );
  }
  return records / ((performance.now() - started) / 1000);
}

/** Reads everything from `from` through a subscription; resolves when the last record arrived. */
function readThrough(tail: PartitionTail, from: bigint, last: bigint): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const sub = tail.subscribe(from, {
      onRecords: (batch: readonly LogRecord[]) => {
        if (batch.at(-1)!.offset >= last) {
          sub.close();
          resolve(Number(last - from + 1n) / ((performance.now() - started) / 1000));
        }
      },
      onError: reject,
    });
  });
}

async function measure(name: string, port: LogPort, topic: string): Promise<Row> {
  const appendPerSec = await fill(port, topic);
  const last = BigInt(records - 1);

  // Tail read: the shared tail starts at 0 with nobody ahead of it.
  const cold = new PartitionTail({ port, topic, partition: 0, maxWaitMs: 100 });
  const tailReadPerSec = await readThrough(cold, 0n, last);
  cold.close();
  // Catch-up read: the tail is live at the end; a reader from 0 catches up to it.
  const tail = new PartitionTail({ port, topic, partition: 0, maxWaitMs: 100 });
  const keeper = tail.subscribe(BigInt(records), { onRecords: () => {}, onError: () => {} });
  await new Promise((resolve) => setTimeout(resolve, 200));
  const catchUpReadPerSec = await readThrough(tail, 0n, last);
  // Handover: while a producer appends one record every 2 ms, readers join 1,000 records back;
  // the time from subscribe to the first record appended after it (the first live one).
  const handovers: number[] = [];
  const live: number[] = [];
  let producing = true;
  const sentAt = new Map<bigint, number>();
  const producer = (async () => {
    while (producing) {
      const at = performance.now();
      const [offset] = await port.append(topic, [{ partition: 0, key: 'bench', value }]);
      sentAt.set(offset!, at);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const liveSub = tail.subscribe((await port.offsets(topic, 0)).highWatermark, {
    onRecords: (batch) => {
      const now = performance.now();
      for (const r of batch) {
        const at = sentAt.get(r.offset);
        if (at !== undefined) live.push(now - at);
      }
    },
    onError: () => {},
  });
  for (let i = 0; i < 20; i++) {
    const { highWatermark } = await port.offsets(topic, 0);
    const from = highWatermark > 1000n ? highWatermark - 1000n : 0n;
    const subscribedAt = performance.now();
    const boundary = highWatermark;
    await new Promise<void>((resolve, reject) => {
      const sub = tail.subscribe(from, {
        onRecords: (batch) => {
          if (batch.at(-1)!.offset >= boundary) {
            handovers.push(performance.now() - subscribedAt);
            sub.close();
            resolve();
          }
        },
        onError: reject,
      });
    });
  }
  producing = false;
  await producer;
  liveSub.close();
  keeper.close();
  tail.close();
  handovers.sort((a, b) => a - b);
  live.sort((a, b) => a - b);
  return {
    log: name,
    records,
    appendPerSec: Math.round(appendPerSec),
    tailReadPerSec: Math.round(tailReadPerSec),
    catchUpReadPerSec: Math.round(catchUpReadPerSec),
    handoverMs: {
      p50: round(percentile(handovers, 50)),
      p99: round(percentile(handovers, 99)),
      max: round(handovers.at(-1) ?? NaN),
    },
    liveLatencyMs: { p50: round(percentile(live, 50)), p99: round(percentile(live, 99)) },
  };
}

const rows: Row[] = [];
const want = (name: string) => values.only === undefined || values.only.split(',').includes(name);

if (want('embedded-memory')) {
  const log = new EmbeddedLog({ path: ':memory:', topics: [{ name: 'bench', partitions: 1 }] });
  rows.push(await measure('embedded (memory)', log, 'bench'));
  await log.close();
}
if (want('embedded-file')) {
  const path = join(mkdtempSync(join(tmpdir(), 'tidemark-bench-')), 'log.sqlite');
  const log = new EmbeddedLog({ path, topics: [{ name: 'bench', partitions: 1 }] });
  rows.push(await measure('embedded (SQLite file)', log, 'bench'));
  await log.close();
}
if (want('kafka')) {
  const kafka = await resolveKafka();
  try {
    const prefix = `tm-bench-${Date.now()}.`;
    await provisionTopics(
      { brokers: kafka.brokers },
      { prefix, partitions: 1, replicationFactor: 1 },
    );
    const log = new KafkaLog({ brokers: kafka.brokers });
    rows.push(await measure(`kafka (${kafka.source})`, log, topicNames(prefix).events));
    await log.close();
  } finally {
    await kafka.stop();
  }
}

console.log(
  `\nlog layer, ${records} records of ${valueBytes} B, one partition; producer, tail and readers in one process on ${process.platform}/${process.arch}, Node ${process.version}`,
);
console.table(
  rows.map((r) => ({
    log: r.log,
    'append rec/s': r.appendPerSec,
    'tail read rec/s': r.tailReadPerSec,
    'catch-up rec/s': r.catchUpReadPerSec,
    'handover p50 ms': r.handoverMs.p50,
    'handover p99 ms': r.handoverMs.p99,
    'live p50 ms': r.liveLatencyMs.p50,
    'live p99 ms': r.liveLatencyMs.p99,
  })),
);
mkdirSync(join(values.out, '..'), { recursive: true });
writeFileSync(
  values.out,
  JSON.stringify(
    { at: new Date().toISOString(), node: process.version, records, valueBytes, rows },
    null,
    2,
  ),
);
console.log(`wrote ${values.out}`);
