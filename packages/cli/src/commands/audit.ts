import { KafkaLog } from '@tidemark/kafka';
import { AuditLog } from '@tidemark/log';
import { topicNames } from '@tidemark/protocol';
import type { Io } from '../io.js';
import { KAFKA_FLAGS, kafkaOptions, prefixOf } from '../flags/kafka.js';
import { duration } from '../flags/ttl.js';
import { parseFlags, str, UsageError } from '../options.js';

// `tidemark audit`: the audit trail of a Kafka deployment as JSON lines — one per call that ended
// in the window, the last record written for it (a call run again after its worker died wrote
// two), in the order the calls ended. What a SIEM's file or HTTP collector takes as it is.

/** `tidemark audit`'s flags, as its help lists them. */
export const AUDIT_FLAGS = {
  ...KAFKA_FLAGS,
  since: { type: 'string' },
  until: { type: 'string' },
  subject: { type: 'string' },
  format: { type: 'string' },
} as const;

export async function audit(args: readonly string[], io: Io): Promise<void> {
  const { values } = parseFlags(args, AUDIT_FLAGS);
  const format = str(values['format']) ?? 'jsonl';
  if (format !== 'jsonl') throw new UsageError(`--format: only jsonl is offered, got "${format}"`);
  const now = Date.now();
  const sinceMs = instant(str(values['since']), '--since', now) ?? now - 24 * 60 * 60 * 1000;
  const untilMs = instant(str(values['until']), '--until', now);
  const topics = topicNames(prefixOf(values));
  const log = new KafkaLog(kafkaOptions(values, io));
  try {
    const trail = new AuditLog({
      log,
      topic: topics.audit,
      partitionCount: await log.partitionCount(topics.audit),
    });
    const records = await trail.read({ sinceMs, untilMs, subject: str(values['subject']) });
    for (const record of records) io.out(JSON.stringify(record));
  } finally {
    await log.close();
  }
}

/** `--since 2h` (that long ago) or `--since 2026-12-01T00:00:00Z` (then). */
function instant(value: string | undefined, flag: string, now: number): number | undefined {
  if (value === undefined) return undefined;
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const at = Date.parse(value);
    if (Number.isNaN(at)) throw new UsageError(`${flag}: not a date: "${value}"`);
    return at;
  }
  return now - duration(value, flag)!;
}
