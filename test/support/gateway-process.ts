// A gateway process for tests: `node gateway-process.ts <brokers> <prefix> <secret-hex>`.
// Prints {"port": N} once listening on 127.0.0.1 (or TIDEMARK_TEST_HOST); drains on SIGTERM. With
// TIDEMARK_TEST_COUNT_FETCHES=1 it also prints {"fetched": {records, bytes}} every 500 ms: what it
// read of `events` (the fan-out benchmark's measure of broker egress to gateways), and
// {"keyPartitions": [...]} when the partitions it mints keys onto change.
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { createKeyring, topicNames } from '@tidemark/protocol';

const [brokers = '', prefix = '', secret = ''] = process.argv.slice(2);
const log = new KafkaLog({ brokers: brokers.split(','), groupSessionTimeoutMs: 6_000 });
const topics = topicNames(prefix);
const gateway = await createGateway({
  log: process.env['TIDEMARK_TEST_COUNT_FETCHES'] === '1' ? countingFetches(log) : log,
  topics,
  // The gateways of one prefix share out its partitions (TIDEMARK_TEST_NO_GROUP=1: they do not).
  ...(process.env['TIDEMARK_TEST_NO_GROUP'] === '1'
    ? {}
    : { group: { groups: log, name: `${prefix}gateways` } }),
  keyring: createKeyring({
    current: { id: 1, secret: Buffer.from(secret, 'hex') },
    // As the CLI reads it: a cluster with gateways of 0.1.0 (which verifies only version 1) mints 1.
    ...(process.env['TIDEMARK_EVENT_ID_VERSION'] === '1' ? { mints: 1 as const } : {}),
  }),
  tailWaitMs: 200,
  // Partition tests wait for a cut gateway's deadline; a shorter one keeps them quick.
  ...(process.env['TIDEMARK_TEST_LOG_TIMEOUT_MS'] === undefined
    ? {}
    : { logTimeoutMs: Number(process.env['TIDEMARK_TEST_LOG_TIMEOUT_MS']) }),
  // ... and a balancer's idle timeout notices a cut gateway sooner with keep-alives more often.
  ...(process.env['TIDEMARK_TEST_KEEP_ALIVE_MS'] === undefined
    ? {}
    : { keepAliveMs: Number(process.env['TIDEMARK_TEST_KEEP_ALIVE_MS']) }),
});
let shown = '';
setInterval(() => {
  const now = JSON.stringify(gateway.keyPartitions);
  if (now !== shown) console.log(JSON.stringify({ keyPartitions: gateway.keyPartitions }));
  shown = now;
}, 200).unref();
// A gateway on a test host of its own (network partition tests) listens on that host's address.
const server = await gateway.listen(0, process.env['TIDEMARK_TEST_HOST'] ?? '127.0.0.1');
const address = server.address();
console.log(
  JSON.stringify({ port: typeof address === 'object' && address !== null ? address.port : 0 }),
);
process.on('SIGTERM', () => {
  void gateway
    .drain()
    .then(() => log.close())
    .finally(() => process.exit(0));
});

/** The log, with what its fetches of `events` return counted and printed. */
function countingFetches(port: KafkaLog): KafkaLog {
  const fetched = { records: 0, bytes: 0 };
  setInterval(() => console.log(JSON.stringify({ fetched })), 500).unref();
  const fetch: KafkaLog['fetch'] = async (topic, partition, offset, options) => {
    const result = await port.fetch(topic, partition, offset, options);
    if (topic === topics.events)
      for (const record of result.records) {
        fetched.records++;
        fetched.bytes += (record.value?.length ?? 0) + (record.key?.length ?? 0);
        for (const [name, value] of record.headers) fetched.bytes += name.length + value.length;
      }
    return result;
  };
  return new Proxy(port, {
    get: (target, key, receiver) => {
      if (key === 'fetch') return fetch;
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}
