import { recordWorkerRefusal } from '@tidemark/otel';
import { checkRequestSeal, type LogRecord } from '@tidemark/protocol';
import type { CompiledWorkerOptions } from './worker-options.js';

/**
 * With the gateways' keyring, a record is taken only with a valid gateway seal: one written by
 * anyone else who can write `requests` is dropped unanswered (an answer would go to whoever it
 * names), said and counted. Without a keyring, every record is taken.
 */
export function sealedByAGateway(
  options: Pick<CompiledWorkerOptions, 'keyring' | 'onProblem'>,
  record: LogRecord,
  at: string,
): boolean {
  const { keyring } = options;
  if (keyring === undefined) return true;
  const seal = checkRequestSeal(keyring, record);
  if (seal === 'valid') return true;
  recordWorkerRefusal('unsealed');
  options.onProblem(
    `${at}: no valid gateway seal (${seal}): not written by a gateway with this secret; dropped`,
  );
  return false;
}
