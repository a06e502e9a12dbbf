// Serves Tidemark in one process (embedded log, a worker, a gateway) for the conformance suite:
// `node serve.ts [module...]` prints {"url": …} and runs until SIGTERM.
import { EmbeddedLog } from '@tidemark/embedded-log';
import { createGateway } from '@tidemark/gateway';
import { createKeyring, topicNames } from '@tidemark/protocol';
import { loadToolModules, Worker } from '@tidemark/worker';
import { randomBytes } from 'node:crypto';

const modules = await loadToolModules(
  process.argv.length > 2 ? process.argv.slice(2) : ['@tidemark/examples/conformance'],
);
const log = new EmbeddedLog({ path: ':memory:' });
const topics = topicNames('conformance.');
log.provisionTopics(topics, { partitions: 2 });
const worker = new Worker({ log, topics, modules, pollMs: 20, onProblem: (p) => console.error(p) });
await worker.start();
const gateway = await createGateway({
  log,
  topics,
  keyring: createKeyring({ current: { id: 1, secret: randomBytes(32) } }),
  tailWaitMs: 100,
});
const server = await gateway.listen(0, '127.0.0.1');
const address = server.address();
console.log(
  JSON.stringify({
    url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/mcp`,
  }),
);
process.on('SIGTERM', () => {
  void gateway
    .drain()
    .then(() => worker.stop())
    .then(() => log.close())
    .finally(() => process.exit(0));
});
