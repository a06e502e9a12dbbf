import { randomBytes } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import { EXIT } from '@tidemark/cli';
import counting from '@tidemark/examples/counting';
import { createGateway } from '@tidemark/gateway';
import { KafkaLog } from '@tidemark/kafka';
import { partitionPlacementProblems, SessionStore } from '@tidemark/log';
import { createKeyring, type SessionId } from '@tidemark/protocol';
import { Worker } from '@tidemark/worker';
import { expect, inject, it, onTestFinished } from 'vitest';
import { provisionTestTopics } from '@tidemark/fixtures/topics';
import { runTidemark } from '../support/cli.js';

// Partitions added to live topics (`kafka-topics --alter`, an operator's first reaction to load)
// move most keys: a key's partition is its hash modulo the count. Nothing written before would be
// found, so a worker and a gateway started on such topics refuse, saying what changed and the way
// out (docs/scaling.md), instead of serving sessions, tasks and streams they cannot find; and
// `tidemark topics check` says the same.

const brokers = inject('kafkaBrokers');
const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(5) } });

it('partitions added under written records: a worker and a gateway refuse to start and topics check fails, naming the counts', async () => {
  const { prefix, names } = await provisionTestTopics({ onTestFinished }, brokers, {
    label: 'grow',
    partitions: 2,
  });
  const before = new KafkaLog({ brokers });
  onTestFinished(() => before.close());
  const sessions = new SessionStore({ port: before, topics: names, partitionCount: 2 });
  for (let i = 0; i < 12; i++) {
    const id = randomBytes(16).toString('base64url') as SessionId;
    await sessions.create({
      id,
      protocolVersion: '2025-06-18',
      initialize: {},
      createdAtMs: Date.now(),
    });
  }
  expect(await partitionPlacementProblems(before, names, 2)).toEqual([]);
  expect(await topicsCheck(prefix)).toMatchObject({ code: EXIT.ok });

  const admin = new Admin({ clientId: 'tidemark-test-grow', bootstrapBrokers: [...brokers] });
  try {
    await admin.createPartitions({
      topics: Object.values(names).map((name) => ({ name, count: 4 })),
    });
  } finally {
    await admin.close();
  }

  const after = new KafkaLog({ brokers });
  onTestFinished(() => after.close());
  const said =
    /sessions holds records written when the topics had 2 (or 3 )?partitions, not 4 .*docs\/scaling\.md/s;
  const worker = new Worker({
    log: after,
    topics: names,
    modules: [counting],
    group: `${prefix}workers`,
    onProblem: () => {},
  });
  onTestFinished(() => worker.stop().catch(() => undefined));
  await expect(worker.start()).rejects.toThrow(said);
  await expect(
    createGateway({ log: after, topics: names, keyring, onError: () => {} }),
  ).rejects.toMatchObject({
    code: 'TIDEMARK_TOPIC_MISMATCH',
    message: expect.stringMatching(said) as string,
  });
  const check = await topicsCheck(prefix);
  expect(check.code).toBe(EXIT.failure);
  expect(check.out).toMatch(said);
});

/** `tidemark topics check` on the test broker, in this process. */
async function topicsCheck(prefix: string) {
  const { code, out } = await runTidemark([
    'topics',
    'check',
    '--brokers',
    brokers.join(','),
    '--prefix',
    prefix,
  ]);
  return { code, out: out.join('\n') };
}
