import {
  parsePartitionKey,
  parseRoutingKey,
  parseSessionId,
  type PartitionKey,
  type RoutingKey,
  type SessionId,
} from '../ids/ids.js';

// The records the gateway writes to `requests` for the worker: a client's JSON-RPC message keyed
// by its session (or, on the stateless lane, by a key of its own), plus headers the worker reads.
// Encoded and decoded only here, so both sides agree byte for byte. Trace context travels in
// further headers (`traceparent`), which the codec passes through untouched.

/** When a gateway lets `tools/call` become a task: never, as each tool declares, or always. */
export type TaskMode = 'never' | 'tool' | 'always';

export const TASK_MODES: readonly TaskMode[] = ['never', 'tool', 'always'];

/** Header naming the request-record format; a record without it is version 1 (the first gateways). */
export const REQUEST_RECORD_VERSION_HEADER = 'tm-rv';

/** Version of the request-record format; a reader refuses versions it does not know. */
export const REQUEST_RECORD_VERSION = '1';

/** Header of a 2026-07-28 request: the SDK's classification of it, as JSON. */
export const CLASSIFICATION_HEADER = 'tm-classification';

/**
 * Header of every request: what its sender's fair shares are counted by on the worker — the
 * subject its gateway authenticated, or `address:<ip>` without authentication.
 */
export const SHARE_HEADER = 'tm-share';

/** Header of a 2026-07-28 request: the subject its gateway authenticated (it has no session). */
export const SUBJECT_HEADER = 'tm-subject';

/**
 * Header of a request whose gateway's credential named the OAuth client it was issued to
 * (`client_id`, else `azp`): that client's id.
 */
const CLIENT_HEADER = 'tm-client';

/** Header of a request whose credential granted scopes: them, space-separated (OAuth's `scope`). */
const SCOPES_HEADER = 'tm-scopes';

/**
 * What the credential of a request said beside its subject: the OAuth client it was issued to and
 * the scopes it grants. Per request, not per session: a client that signs in again (a refresh, a
 * step-up for more scopes) sends its next requests with the new ones.
 */
export interface Caller {
  readonly clientId?: string | undefined;
  readonly scopes?: readonly string[] | undefined;
}

/** Header of a 2026-07-28 request: when its gateway lets a `tools/call` become a task. */
const TASKS_HEADER = 'tm-tasks';

/** Header of a 2026-07-28 `tools/call` with an idempotency key (its routing key derives from it). */
const IDEMPOTENT_HEADER = 'tm-idempotent';

/**
 * Header of a session's `tools/call` with an idempotency key, written under the key's routing key
 * (the worker that owns the key decides, then passes it on to the session's partition): the session.
 */
const KEYED_SESSION_HEADER = 'tm-keyed-session';

/**
 * Header of a request passed on to its session's partition to join another call with the same
 * idempotency key: the call joined, as `<session>/<stream>`. Its worker streams that call's
 * messages to the client instead of running the tool.
 */
const JOINS_HEADER = 'tm-joins';

/** Header of a control record: the gateway telling the session's worker something. */
export const CONTROL_HEADER = 'tm-control';

/** Control: the client ended its session (DELETE); cancel its running calls. */
export const SESSION_ENDED = 'session-ended';

/** The JSON-RPC notification a session-ended control record carries (never sent to a client). */
export const SESSION_ENDED_METHOD = 'notifications/tidemark/session-ended';

/** Control: a gateway holds an open stream of the session, so it is not idle (keeps it from expiring). */
export const SESSION_TOUCHED = 'session-touched';

/** The JSON-RPC notification a control record carries (never sent to a client). */
export const CONTROL_METHOD = 'notifications/tidemark/control';

export type SessionControl = typeof SESSION_ENDED | typeof SESSION_TOUCHED;

/** A JSON-RPC message as the gateway accepted it: an object, checked by the SDK's guards. */
export type RequestMessage = Readonly<Record<string, unknown>>;

/** What one record of `requests` says. */
export type RequestRecord =
  /**
   * A message of the session lane (2025-03-26 … 2025-11-25). `joins`: a keyed call passed on to
   * join the call (session and stream) that holds its key.
   */
  | {
      readonly lane: 'session';
      readonly session: SessionId;
      readonly message: RequestMessage;
      readonly share?: string | undefined;
      readonly caller?: Caller | undefined;
      readonly joins?: { readonly session: PartitionKey; readonly stream: string } | undefined;
    }
  /**
   * A session's `tools/call` with an idempotency key, under the key's routing key: the key's worker
   * decides whether it runs (passed on to the session as is) or joins (passed on with `joins`).
   */
  | {
      readonly lane: 'keyed-session';
      readonly key: RoutingKey;
      readonly session: SessionId;
      readonly message: RequestMessage;
      readonly subject: string | undefined;
      readonly share?: string | undefined;
      readonly caller?: Caller | undefined;
    }
  /**
   * A message of the stateless lane (2026-07-28): routed by a key of its own; the classification
   * binds the worker's server to the request's revision.
   */
  | {
      readonly lane: 'stateless';
      readonly key: RoutingKey;
      readonly message: RequestMessage;
      readonly classification: unknown;
      readonly subject: string | undefined;
      readonly share?: string | undefined;
      readonly caller?: Caller | undefined;
      /** The gateway's `--tasks`; absent (a gateway from before tasks) is `never`. */
      readonly tasks?: TaskMode | undefined;
      /**
       * A `tools/call` with an idempotency key: `key` derives from it, and the worker runs the
       * first such request, answering the later ones with its outcome (or a refusal).
       */
      readonly idempotent?: boolean | undefined;
    }
  /** The gateway telling the session's worker something; never shown to a tool. */
  | { readonly lane: 'control'; readonly session: SessionId; readonly control: SessionControl };

/** A record ready to append, without its partition and trace headers. */
export interface EncodedRequestRecord {
  readonly key: string;
  readonly value: Uint8Array;
  readonly headers: Array<[string, string]>;
}

export function encodeRequestRecord(record: RequestRecord): EncodedRequestRecord {
  const headers: Array<[string, string]> = [
    [REQUEST_RECORD_VERSION_HEADER, REQUEST_RECORD_VERSION],
  ];
  if (record.lane !== 'control' && record.share !== undefined)
    headers.push([SHARE_HEADER, record.share]);
  if (record.lane !== 'control') headers.push(...callerHeaders(record.caller));
  switch (record.lane) {
    case 'session':
      if (record.joins !== undefined)
        headers.push([JOINS_HEADER, `${record.joins.session}/${record.joins.stream}`]);
      return { key: record.session, value: json(record.message), headers };
    case 'keyed-session':
      headers.push([KEYED_SESSION_HEADER, record.session]);
      if (record.subject !== undefined) headers.push([SUBJECT_HEADER, record.subject]);
      return { key: record.key, value: json(record.message), headers };
    case 'stateless':
      headers.push([CLASSIFICATION_HEADER, JSON.stringify(record.classification)]);
      if (record.subject !== undefined) headers.push([SUBJECT_HEADER, record.subject]);
      if (record.tasks !== undefined && record.tasks !== 'never')
        headers.push([TASKS_HEADER, record.tasks]);
      if (record.idempotent === true) headers.push([IDEMPOTENT_HEADER, '1']);
      return { key: record.key, value: json(record.message), headers };
    case 'control': {
      headers.push([CONTROL_HEADER, record.control]);
      const method = record.control === SESSION_ENDED ? SESSION_ENDED_METHOD : CONTROL_METHOD;
      return { key: record.session, value: json({ jsonrpc: '2.0', method }), headers };
    }
  }
}

export type RequestRecordDecoding =
  | { readonly ok: true; readonly record: RequestRecord }
  | { readonly ok: false; readonly problem: string };

/** Reads one record of `requests`. Never throws: what is not a request record says why. */
export function decodeRequestRecord(record: {
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}): RequestRecordDecoding {
  const header = (name: string) => record.headers.find(([n]) => n === name)?.[1];
  const version = header(REQUEST_RECORD_VERSION_HEADER) ?? REQUEST_RECORD_VERSION;
  if (version !== REQUEST_RECORD_VERSION)
    return { ok: false, problem: `request record version ${version} is not known here` };
  const session = record.key === null ? undefined : parseSessionId(record.key);
  // A routing key has a session id's form: what the record is says which one the key is.
  const key = record.key === null ? undefined : parseRoutingKey(record.key);
  if (session === undefined || key === undefined) return { ok: false, problem: 'no session key' };
  const message = parseMessage(record.value);
  if (message === undefined) return { ok: false, problem: 'not a JSON-RPC message' };
  const control = header(CONTROL_HEADER);
  if (control === SESSION_ENDED || control === SESSION_TOUCHED)
    return { ok: true, record: { lane: 'control', session, control } };
  const shared = header(SHARE_HEADER);
  // Who sent it: what its shares are counted by, and what its credential said.
  const sender = { ...(shared === undefined ? {} : { share: shared }), ...callerOf(header) };
  const keyedSession = header(KEYED_SESSION_HEADER);
  if (keyedSession !== undefined) {
    const of = parseSessionId(keyedSession);
    if (of === undefined) return { ok: false, problem: 'a keyed call of no session' };
    const subject = header(SUBJECT_HEADER);
    return {
      ok: true,
      record: { lane: 'keyed-session', key, session: of, message, subject, ...sender },
    };
  }
  const classification = header(CLASSIFICATION_HEADER);
  if (classification === undefined) {
    const joins = parseJoins(header(JOINS_HEADER));
    return {
      ok: true,
      record: { lane: 'session', session, message, ...sender, ...(joins && { joins }) },
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(classification);
  } catch {
    return { ok: false, problem: 'unreadable classification' };
  }
  const subject = header(SUBJECT_HEADER);
  const tasks = TASK_MODES.find((mode) => mode === header(TASKS_HEADER)) ?? 'never';
  const idempotent = header(IDEMPOTENT_HEADER) === '1';
  return {
    ok: true,
    record: {
      lane: 'stateless',
      key,
      message,
      classification: parsed,
      subject,
      tasks,
      ...sender,
      ...(idempotent ? { idempotent } : {}),
    },
  };
}

function callerHeaders(caller: Caller | undefined): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  if (caller?.clientId !== undefined) headers.push([CLIENT_HEADER, caller.clientId]);
  if (caller?.scopes !== undefined) headers.push([SCOPES_HEADER, caller.scopes.join(' ')]);
  return headers;
}

/** The caller a record's headers name; none when they name nothing (a gateway without OAuth). */
function callerOf(header: (name: string) => string | undefined): { caller?: Caller } {
  const clientId = header(CLIENT_HEADER);
  const scopes = header(SCOPES_HEADER);
  if (clientId === undefined && scopes === undefined) return {};
  return {
    caller: {
      ...(clientId === undefined ? {} : { clientId }),
      ...(scopes === undefined ? {} : { scopes: scopes.split(' ').filter((s) => s !== '') }),
    },
  };
}

function parseJoins(
  value: string | undefined,
): { session: PartitionKey; stream: string } | undefined {
  if (value === undefined) return undefined;
  const slash = value.indexOf('/');
  const session = parsePartitionKey(value.slice(0, slash < 0 ? value.length : slash));
  return session === undefined || slash < 0
    ? undefined
    : { session, stream: value.slice(slash + 1) };
}

function json(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value));
}

function parseMessage(value: Uint8Array | null): RequestMessage | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value).toString());
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as RequestMessage)
      : undefined;
  } catch {
    return undefined;
  }
}
