import { randomUUID } from 'node:crypto';
import { KafkaLog } from '@tidemark/kafka';
import {
  RequestWriter,
  StepJournal,
  StreamHeadStore,
  restingCalls,
  type WaitingStep,
} from '@tidemark/log';
import {
  asRoutingKey,
  parsePartitionKey,
  TASK_CANCEL_METHOD,
  topicNames,
  WAKE_METHOD,
  type PartitionKey,
  type RequestRecord,
} from '@tidemark/protocol';
import type { Io } from '../io.js';
import { keyringOf, secretOf } from '../flags/event-id-secret.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from '../flags/kafka.js';
import { parseFlags, str, UsageError } from '../options.js';

// `tidemark calls list|wake|cancel`: an operator's view of the calls resting in the log — asleep
// (`ex.sleep`) or waiting for a signal (`ex.signal`) — and their repairs. `list` reads the
// journals of every partition; `wake` and `cancel` write a request sealed with the gateways'
// secret, which the worker that owns the call carries out: `wake` ends its sleeps now, `cancel`
// cancels a task (its compensations, if it is running, run as on a client's cancel).

/** `tidemark calls`'s flags, as its help lists them. */
export const CALLS_FLAGS = {
  ...KAFKA_FLAGS,
  'secret-file': { type: 'string' },
} as const;

export async function calls(args: readonly string[], io: Io): Promise<void> {
  const { values, positionals } = parseFlags(args, CALLS_FLAGS);
  const [action, owner, journal] = positionals;
  if (action !== 'list' && action !== 'wake' && action !== 'cancel')
    throw new UsageError(
      `expected an action: tidemark calls list|wake|cancel, got ${action === undefined ? 'nothing' : `"${action}"`}`,
    );
  const topics = topicNames(prefixOf(values));
  const log = new KafkaLog(kafkaOptions(values, io));
  try {
    const partitionCount = await log.partitionCount(topics.streams);
    if (action === 'list') {
      for (const waiting of await listWaiting(log, topics, partitionCount))
        io.out(JSON.stringify(describe(waiting)));
      return;
    }
    const key = keyOf(owner, action);
    if (action === 'wake' && journal === undefined)
      throw new UsageError('tidemark calls wake <owner> <journal>: both, as `list` prints them');
    const keyring = keyringOf(secretOf(str(values['secret-file']), io));
    const writer = new RequestWriter({ log, topic: topics.requests, partitionCount, keyring });
    const message =
      action === 'wake'
        ? { id: `tm-wake-${randomUUID()}`, method: WAKE_METHOD, params: { journal } }
        : { method: TASK_CANCEL_METHOD };
    await writer.write(key, [operatorRecord(key, message)]);
    io.out(
      action === 'wake'
        ? `wake asked of ${key} ${journal}: its worker ends its sleeps now`
        : `cancel asked of task ${key}`,
    );
  } finally {
    await log.close();
  }
}

/** Every call resting in the log now whose stream has not ended, soonest first. */
function listWaiting(
  log: KafkaLog,
  topics: ReturnType<typeof topicNames>,
  partitionCount: number,
): Promise<WaitingStep[]> {
  const stores = { port: log, topics, partitionCount };
  return restingCalls(
    new StepJournal(stores),
    new StreamHeadStore(stores),
    partitionCount,
    Date.now(),
  );
}

function describe(waiting: WaitingStep): Record<string, unknown> {
  const at = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    owner: waiting.owner,
    journal: waiting.journal,
    kind: waiting.kind,
    name: waiting.name,
    since: at(waiting.sinceMs),
    [waiting.kind === 'sleep' ? 'wakeAt' : 'expiresAt']: at(waiting.untilMs),
  };
}

function keyOf(owner: string | undefined, action: string): PartitionKey {
  const key = owner === undefined ? undefined : parsePartitionKey(owner);
  if (key === undefined)
    throw new UsageError(
      `tidemark calls ${action} <owner>: a call's owner key, as \`list\` prints it`,
    );
  return key;
}

/** An operator's request under a call's key, as a gateway writes one (sealed by the writer). */
function operatorRecord(key: PartitionKey, message: Record<string, unknown>): RequestRecord {
  return {
    lane: 'stateless',
    key: asRoutingKey(key),
    message: { jsonrpc: '2.0', ...message },
    classification: null,
    subject: undefined,
  };
}
