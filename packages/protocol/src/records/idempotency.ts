import { createHash } from 'node:crypto';
import type { RoutingKey } from '../ids/ids.js';
import { JsonRpcErrorCodes } from '../wire/wire.js';

// Idempotency keys of `tools/call` (the IETF httpapi `Idempotency-Key` header, or
// `_meta["io.tidemark/idempotency-key"]`): the same key, scoped to the authenticated subject, with
// the same tool and arguments gets the original execution; with others, a refusal.

/** The `_meta` key a request carries its idempotency key in (any lane, and for tasks). */
export const IDEMPOTENCY_META_KEY = 'io.tidemark/idempotency-key';

/** Longest idempotency key, in characters (the IETF draft suggests a UUID; 255 leaves room). */
const MAX_IDEMPOTENCY_KEY = 255;

/** The JSON-RPC error `data.reason` of a key used again with other arguments. */
export const IDEMPOTENCY_KEY_REUSED = 'idempotency-key-reused';
/** Why a keyed request was refused: the call its key belongs to went with its session. */
export const IDEMPOTENCY_KEY_GONE = 'idempotency-key-gone';

export type IdempotencyKeyReading =
  | { readonly ok: true; readonly key: string | undefined }
  | { readonly ok: false; readonly problem: string };

/**
 * The idempotency key of a request: the `Idempotency-Key` header (a Structured Field string,
 * `"…"`, or a bare token) or the `_meta` key — equal when both are given. Printable ASCII, 1 to 255
 * characters.
 */
export function readIdempotencyKey(
  header: string | undefined,
  meta: unknown,
): IdempotencyKeyReading {
  const fromHeader = header === undefined ? undefined : unquote(header.trim());
  const fromMeta =
    typeof meta === 'object' && meta !== null
      ? (meta as Record<string, unknown>)[IDEMPOTENCY_META_KEY]
      : undefined;
  if (fromMeta !== undefined && typeof fromMeta !== 'string')
    return { ok: false, problem: `_meta["${IDEMPOTENCY_META_KEY}"] must be a string` };
  if (fromHeader !== undefined && fromMeta !== undefined && fromHeader !== fromMeta)
    return {
      ok: false,
      problem: `the Idempotency-Key header and _meta["${IDEMPOTENCY_META_KEY}"] differ`,
    };
  const key = fromHeader ?? fromMeta;
  if (key === undefined) return { ok: true, key: undefined };
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY || !/^[\x20-\x7e]+$/.test(key))
    return {
      ok: false,
      problem: `an idempotency key is 1 to ${MAX_IDEMPOTENCY_KEY} printable ASCII characters`,
    };
  return { ok: true, key };
}

/**
 * The routing key of a keyed call: the same for the same subject and key on every gateway, so
 * every request with that key reaches the one worker that owns it, in order — the first is the
 * execution, the later ones join it. (As a task, it is the task's id.)
 */
export function idempotentRoutingKey(subject: string | undefined, key: string): RoutingKey {
  return createHash('sha256')
    .update(`tidemark-idempotency\u0000${subject ?? ''}\u0000${key}`)
    .digest()
    .subarray(0, 16)
    .toString('base64url') as RoutingKey;
}

/** What makes two `tools/call` requests the same call: the tool and its arguments, as canonical JSON. */
export function callFingerprint(params: unknown): string {
  const { name, arguments: args } = (params ?? {}) as { name?: unknown; arguments?: unknown };
  return createHash('sha256')
    .update(canonicalJson({ name, arguments: args ?? {} }))
    .digest('base64url');
}

/** The JSON-RPC error of a key used again for another call. */
export function idempotencyKeyReused(tool: unknown): {
  code: number;
  message: string;
  data: { reason: string };
} {
  return {
    code: JsonRpcErrorCodes.invalidParams,
    message: `Invalid params: this idempotency key was used for another call (${typeof tool === 'string' ? `tools/call ${tool}` : 'tools/call'} with other arguments); use a new key for a new call`,
    data: { reason: IDEMPOTENCY_KEY_REUSED },
  };
}

/**
 * The answer to a request whose key belongs to a session's call that went with its session
 * (ended by DELETE, or expired) before an outcome could be given: nothing will ever answer it.
 */
export function idempotencyKeyGone(): { code: number; message: string; data: { reason: string } } {
  return {
    code: JsonRpcErrorCodes.invalidParams,
    message:
      'Invalid params: the call this idempotency key belongs to ended with its session (deleted or expired) and has no outcome to give; use a new key for a new call',
    data: { reason: IDEMPOTENCY_KEY_GONE },
  };
}

/** JSON with object keys sorted at every level: equal values, equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"')
    ? value.slice(1, -1).replace(/\\(["\\])/g, '$1')
    : value;
}
