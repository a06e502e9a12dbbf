// A worker process for tests that kill workers: `node worker-process.ts <brokers> <prefix> <group>
// [<secret-hex> events|signals]` — with the gateways' secret it holds their keyring (it takes only
// records they sealed, and signs signal URLs); with `events` it also offers the example event
// types (webhooks to loopback allowed). Prints JSON lines: {"assigned":[...]} when its partitions
// change, {"execution":{...}} per execution, {"ask":{...}} per approval asked (examples/approvals).
import { approvalsModule } from '@tidemark/examples/approvals';
import counting from '@tidemark/examples/counting';
import events from '@tidemark/examples/events';
import interactive from '@tidemark/examples/interactive';
import payments from '@tidemark/examples/payments';
import { KafkaLog } from '@tidemark/kafka';
import { createKeyring, topicNames } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';

const [brokers = '', prefix = '', group = '', secret, withEvents] = process.argv.slice(2);
const keyring =
  secret === undefined
    ? {}
    : { keyring: createKeyring({ current: { id: 1, secret: Buffer.from(secret, 'hex') } }) };
const eventOptions =
  withEvents !== 'events'
    ? {}
    : { allowLoopbackWebhooks: true, eventScanMs: 200, webhookBackoffMs: 100 };
const approvals = approvalsModule({ notify: (ask) => console.log(JSON.stringify({ ask })) });
const log = new KafkaLog({
  brokers: brokers.split(','),
  groupSessionTimeoutMs: Number(process.env['TIDEMARK_TEST_GROUP_SESSION_MS'] ?? 6_000),
  // A mixed group of releases can be tried on each protocol (rollback tests).
  ...(process.env['TIDEMARK_TEST_GROUP_PROTOCOL'] === undefined
    ? {}
    : { groupProtocol: process.env['TIDEMARK_TEST_GROUP_PROTOCOL'] as 'classic' | 'consumer' }),
});
const worker = new Worker({
  log,
  topics: topicNames(prefix),
  modules: [
    counting,
    interactive,
    payments,
    approvals,
    ...(withEvents === 'events' ? [events] : []),
  ],
  ...keyring,
  ...eventOptions,
  ...(process.env['TIDEMARK_TEST_PUBLIC_URL'] === undefined
    ? {}
    : { publicUrl: process.env['TIDEMARK_TEST_PUBLIC_URL'] }),
  group,
  commitIntervalMs: 200,
  pollMs: 200,
  // Suites that move calls on purpose give a handoff shorter than their calls.
  ...(process.env['TIDEMARK_TEST_HANDOFF_MS'] === undefined
    ? {}
    : { handoffTimeoutMs: Number(process.env['TIDEMARK_TEST_HANDOFF_MS']) }),
  onExecution: (execution) => console.log(JSON.stringify({ execution })),
  onStep: (step) => console.log(JSON.stringify({ step })),
  // Timed, to set beside the faults a chaos run injects.
  onProblem: (problem, error) =>
    console.error(
      `${new Date().toISOString().slice(11, 23)} ${error === undefined ? problem : `${problem}: ${describe(error)}`}`,
    ),
});
await worker.start();
let last = '';
setInterval(() => {
  const assigned = JSON.stringify(worker.assignedPartitions);
  if (assigned !== last)
    console.log(
      JSON.stringify({
        assigned: worker.assignedPartitions,
        at: new Date().toISOString().slice(11, 23),
      }),
    );
  last = assigned;
}, 100);
process.on('SIGTERM', () => {
  void worker
    .stop()
    .then(() => log.close())
    .finally(() => process.exit(0));
});

/** An error with its stack and cause, for the test's failure messages. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return JSON.stringify(error);
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : '';
  return `${error.stack ?? error.message}${cause}`;
}
