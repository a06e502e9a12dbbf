// A gateway process for tests: `node gateway-process.ts <brokers> <prefix> <secret-hex>`.
// Prints {"port": N} once listening on 127.0.0.1; drains on SIGTERM.
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { createKeyring, topicNames } from '@tidemark/protocol';

const [brokers = '', prefix = '', secret = ''] = process.argv.slice(2);
const log = new KafkaLog({ brokers: brokers.split(',') });
const gateway = await createGateway({
  log,
  topics: topicNames(prefix),
  keyring: createKeyring({ current: { id: 1, secret: Buffer.from(secret, 'hex') } }),
  tailWaitMs: 200,
});
const server = await gateway.listen(0, '127.0.0.1');
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
