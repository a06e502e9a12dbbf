// The chaos runner's check of the audit trail (issue #59): after the run, `tidemark audit`'s
// reading of the log (`AuditLog.read`, the last record per call) lists every call the clients saw
// answered exactly once, with the outcome `answered` — whatever was killed or cut while it ran.
// Calls are matched by where their effect ran (the effects file names each run's owner and
// stream, as the audit record does).
// (Runs under Node's type stripping: the chaos runner imports it.)
import { readFileSync } from 'node:fs';
import { AuditLog } from '@tidemark/log';
import type { LogPort } from '@tidemark/protocol';

export interface AuditCheck {
  /** Calls in the exported trail. */
  readonly exported: number;
  /** By outcome. */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Answered calls the trail does not list as answered: each a broken promise. */
  readonly missing: string[];
}

export async function checkAudit(
  log: LogPort,
  topic: string,
  effectsFile: string,
  answeredEffects: ReadonlySet<string>,
): Promise<AuditCheck> {
  const trail = new AuditLog({ log, topic, partitionCount: await log.partitionCount(topic) });
  const records = await trail.read();
  const byCall = new Map(records.map((record) => [`${record.owner}/${record.stream}`, record]));
  const callOf = new Map<string, string>();
  for (const line of readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean)) {
    const run = JSON.parse(line) as { effectKey: string; session: string; stream: string };
    if (!callOf.has(run.effectKey)) callOf.set(run.effectKey, `${run.session}/${run.stream}`);
  }
  const missing = [...answeredEffects].flatMap((effect) => {
    const call = callOf.get(effect);
    const record = call === undefined ? undefined : byCall.get(call);
    return record?.outcome === 'answered'
      ? []
      : [`${call ?? effect}: ${record === undefined ? 'no record' : record.outcome}`];
  });
  const outcomes: Record<string, number> = {};
  for (const { outcome } of records) outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  return { exported: records.length, outcomes, missing };
}
