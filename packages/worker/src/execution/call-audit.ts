import {
  argumentsDigest,
  messageOf,
  type AuditOutcome,
  type AuditRecord,
  type PartitionKey,
  type StreamId,
} from '@tidemark/protocol';
import { whileUnavailable } from './backoff.js';
import type { CallOwner } from './call-owner.js';

// A call's audit record (docs/auth.md, "The audit trail"), made where its outcome is known: the
// retry wrapper when the tool's last execution ended, the lanes when a call is refused before its
// tool runs. Written before the call's answer (`CallEnvironment.audit`).

/** How a call ended, as the audit trail says it. */
export interface CallEnd {
  readonly tool: string;
  /** The module whose tool ran (a hosted server's: `mcp-server:<name>`). */
  readonly module?: string | undefined;
  readonly outcome: AuditOutcome;
  /** The tool answered `isError: true`. */
  readonly toolError?: boolean | undefined;
  /** Why it was refused or failed. */
  readonly reason?: unknown;
  /** The call's arguments: only their digest is kept. */
  readonly arguments: unknown;
}

function auditRecordOf(call: CallOwner, end: CallEnd, executions: number): AuditRecord {
  const { clientId, scopes } = call.caller ?? {};
  return {
    atMs: Date.now(),
    owner: call.owner,
    stream: call.stream,
    tool: end.tool,
    ...(end.module === undefined ? {} : { module: end.module }),
    ...(call.subject === undefined ? {} : { subject: call.subject }),
    ...(clientId === undefined ? {} : { clientId }),
    ...(scopes === undefined ? {} : { scopes }),
    arguments: argumentsDigest(end.arguments),
    ...(call.idempotent === true ? { idempotent: true as const } : {}),
    outcome: end.outcome,
    ...(end.toolError === true ? { toolError: true } : {}),
    ...(end.reason === undefined ? {} : { reason: reasonOf(end.reason) }),
    executions,
  };
}

/**
 * Writes a call's audit record — before its answer, so an answered call has one (a call run again
 * after its worker died writes another under the same key: the trail keeps the last). A log that
 * refuses is tried again while this process runs the call; a record it never takes is said, and
 * the call is answered all the same.
 */
export async function writeAudit(
  // `CallEnvironment`'s, said here: that module's types import this one's.
  environment: {
    readonly audit?: ((record: AuditRecord) => Promise<void>) | undefined;
    readonly onWriteFailure?:
      ((owner: PartitionKey, stream: StreamId, error: unknown) => void) | undefined;
  },
  call: CallOwner,
  end: CallEnd,
  executions: number,
  stopped: () => boolean,
): Promise<void> {
  const { audit, onWriteFailure } = environment;
  if (audit === undefined || stopped()) return;
  const { owner, stream } = call;
  const record = auditRecordOf(call, end, executions);
  const problem = (error: unknown) => onWriteFailure?.(owner, stream, error);
  await whileUnavailable(() => audit(record), { stopped, onRetry: problem }).catch(problem);
}

/** The tool and arguments of a `tools/call` request (a refusal's audit record names them). */
export function toolCallOf(message: unknown): { tool: string; arguments: unknown } {
  const params = (message as { params?: { name?: unknown; arguments?: unknown } }).params;
  return {
    tool: typeof params?.name === 'string' ? params.name : '',
    arguments: params?.arguments,
  };
}

function reasonOf(reason: unknown): string {
  if (typeof reason === 'object' && reason !== null && 'message' in reason)
    return String(reason.message);
  return messageOf(reason);
}
