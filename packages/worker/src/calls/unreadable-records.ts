import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { recordWorkerRefusal } from '@tidemark/otel';
import { JsonRpcErrorCodes, parseSessionId, type LogRecord } from '@tidemark/protocol';
import { answerFailure, type LaneContext } from './lane-context.js';
import type { CompiledWorkerOptions } from '../worker-options.js';

/**
 * A sealed record of `requests` this worker cannot read (a newer release's, or damaged): said with
 * where it is, counted (`tidemark.worker.refusals{reason=unreadable}`), and — when its key and its
 * request can still be told — answered with an error, so its client is not left waiting. The
 * caller commits its offset: one bad record never stalls a partition.
 */
export async function answerUnreadable(
  lane: LaneContext,
  options: Pick<CompiledWorkerOptions, 'onProblem'>,
  record: LogRecord,
  problem: string,
): Promise<void> {
  recordWorkerRefusal('unreadable');
  options.onProblem(`requests ${record.partition}@${record.offset}: ${problem}; skipped`);
  const session = parseSessionId(record.key ?? '');
  const message = parsedMessage(record.value);
  if (session === undefined || message === undefined) return;
  await answerFailure(lane, session, message, {
    code: JsonRpcErrorCodes.invalidRequest,
    message: `Invalid Request: this worker cannot read the request's record (${problem}); it was not run`,
  });
}

/** A record's value as a JSON-RPC message, when it still reads as one. */
function parsedMessage(value: Uint8Array | null): JSONRPCMessage | undefined {
  if (value === null) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(value).toString('utf8')) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'jsonrpc' in parsed
      ? (parsed as JSONRPCMessage)
      : undefined;
  } catch {
    return undefined;
  }
}
