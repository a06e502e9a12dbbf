import { createHash } from 'node:crypto';

// The audit trail (docs/auth.md, "Audit"): one record per call in the `audit` topic, keyed by the
// call (`<owner>/<stream>`), written by the worker before the call's answer — so a call answered
// has its record, and a call run again after its worker died writes another under the same key:
// a reader keeps the last per key (`latestAuditRecords`), one per call.

/** How a call ended, for the audit trail. */
export type AuditOutcome =
  /** The tool answered (its result may say `isError`: `toolError`). */
  | 'answered'
  /** The tool failed, past its retries. */
  | 'error'
  /** Refused before the tool ran (`reason` says why: scopes, a call run too often). */
  | 'refused'
  /** Cancelled by its client, or stopped when its task's TTL passed. */
  | 'cancelled';

export interface AuditRecord {
  /** When the call ended (ms since the epoch). */
  readonly atMs: number;
  /** The key the call ran under: its session, its stateless request's routing key, or its task id. */
  readonly owner: string;
  readonly stream: string;
  readonly tool: string;
  /**
   * The tool module that served it — for a hosted MCP server `mcp-server:<name>`, so the trail
   * (and the console) says which server ran the call. Absent when refused before any ran.
   */
  readonly module?: string;
  /** The subject the gateway authenticated; absent where it authenticates nobody. */
  readonly subject?: string;
  readonly clientId?: string;
  readonly scopes?: readonly string[];
  /** `sha256:` and the base64url digest of the arguments' JSON (`argumentsDigest`), never the arguments. */
  readonly arguments: string;
  /**
   * The call came with an `Idempotency-Key`: its `owner` is the key derived from it (the same
   * Idempotency-Key of the same subject, the same owner), so the key itself is never stored.
   */
  readonly idempotent?: true;
  readonly outcome: AuditOutcome;
  /** The tool answered with `isError: true`. */
  readonly toolError?: boolean;
  /** Why it was refused or failed (its error's message, at most 500 characters). */
  readonly reason?: string;
  /** The executions the call took here and before: more than one, it ran again (a retry, a takeover). */
  readonly executions: number;
}

const MAX_REASON = 500;

/** The key of a call's audit record: one per call, the last written wins. */
export function auditKey(owner: string, stream: string): string {
  return `${owner}/${stream}`;
}

/**
 * A digest of a call's arguments that says whether two calls had the same ones without keeping
 * them: SHA-256 of their JSON with object keys sorted.
 */
export function argumentsDigest(args: unknown): string {
  const digest = createHash('sha256')
    .update(canonicalJson(args ?? {}))
    .digest('base64url');
  return `sha256:${digest}`;
}

export function encodeAuditRecord(record: AuditRecord): Uint8Array {
  const reason = record.reason?.slice(0, MAX_REASON);
  return Buffer.from(JSON.stringify(reason === undefined ? record : { ...record, reason }));
}

/** An audit record read from the log, or undefined for a value that is not one. */
export function decodeAuditRecord(value: Uint8Array | null): AuditRecord | undefined {
  if (value === null) return undefined;
  try {
    const record = JSON.parse(Buffer.from(value).toString('utf8')) as Partial<AuditRecord>;
    return typeof record.atMs === 'number' &&
      typeof record.owner === 'string' &&
      typeof record.stream === 'string' &&
      typeof record.tool === 'string' &&
      typeof record.outcome === 'string'
      ? (record as AuditRecord)
      : undefined;
  } catch {
    return undefined;
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      )
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}
