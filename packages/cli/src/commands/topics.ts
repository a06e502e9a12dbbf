import { checkTopics, KafkaLog, provisionTopics } from '@tidemark/kafka';
import { checkPartitionPlacement } from '@tidemark/worker';
import type { Io } from '../io.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from '../flags/kafka.js';
import { duration } from '../flags/ttl.js';
import { parseFlags, positiveInt, str, UsageError } from '../options.js';

// `tidemark topics create|check`: the topics with explicit configs, never broker
// auto-creation.

/** `tidemark topics`'s flags, as its help lists them. */
export const TOPICS_FLAGS = {
  ...KAFKA_FLAGS,
  partitions: { type: 'string' },
  'replication-factor': { type: 'string' },
  'audit-retention': { type: 'string' },
} as const;

export async function topics(args: readonly string[], io: Io): Promise<void> {
  const { values, positionals } = parseFlags(args, TOPICS_FLAGS);
  const action = positionals[0];
  if (action !== 'create' && action !== 'check')
    throw new UsageError(
      `expected an action: tidemark topics create|check, got ${action === undefined ? 'nothing' : `"${action}"`}`,
    );
  const kafka = kafkaOptions(values, io);
  const auditRetentionMs = duration(str(values['audit-retention']), '--audit-retention');
  const layout = {
    prefix: prefixOf(values),
    partitions: positiveInt(str(values['partitions']), '--partitions', 12),
    replicationFactor: positiveInt(str(values['replication-factor']), '--replication-factor', 3),
    ...(auditRetentionMs === undefined ? {} : { auditRetentionMs }),
  };
  const admin = {
    brokers: kafka.brokers,
    ...(kafka.connection === undefined ? {} : { connection: kafka.connection }),
  };
  if (action === 'create') {
    const report = await provisionTopics(admin, layout).catch((error: unknown) => {
      throw tooFewBrokers(error, layout.replicationFactor) ?? error;
    });
    io.out(
      `created: ${report.created.join(', ') || 'none'}; already there: ${report.existing.join(', ') || 'none'}`,
    );
  } else {
    const names = await checkTopics(admin, layout);
    // Equal counts can still be changed ones: records written before partitions were added.
    const log = new KafkaLog(kafka);
    try {
      await checkPartitionPlacement(log, names, await log.partitionCount(names.events));
    } finally {
      await log.close();
    }
    io.out(`topics ok: ${Object.values(names).join(', ')}`);
  }
}

/** provisionTopics' "more replicas than brokers", said in terms of this command's flags. */
function tooFewBrokers(error: unknown, wanted: number): UsageError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { option, limit } = error as { option?: unknown; limit?: unknown };
  if (option !== 'replicationFactor' || typeof limit !== 'number') return undefined;
  return new UsageError(
    `replication factor ${wanted} is larger than the ${limit} available broker${limit === 1 ? '' : 's'}: pass --replication-factor ${limit}`,
  );
}
