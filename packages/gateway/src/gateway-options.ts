import type {
  GroupPort,
  Keyring,
  LogPort,
  SessionId,
  StreamId,
  TaskMode,
  TopicNames,
} from '@tidemark/protocol';
import { invalidOption, positiveIntegers, TASK_MODES } from '@tidemark/protocol';
import type { Authenticate } from './auth/index.js';
import type { ResourceMetadataOptions } from './auth/index.js';

export interface GatewayOptions {
  log: LogPort;
  topics: TopicNames;
  /** Signs and verifies event ids. Every replica must share it. */
  keyring: Keyring;
  /**
   * The gateways' group on `events` (Kafka: a consumer group; `groups` is usually the `log`): the
   * gateways share out its partitions, and each mints the keys it creates — session ids, task ids,
   * the routing keys of 2026-07-28 requests — onto its own share, so each reads about its share of
   * `events` instead of all of it (docs/scaling.md). Without it, keys land on any partition.
   */
  group?: { readonly groups: GroupPort; readonly name: string };
  /**
   * Path of the MCP endpoint.
   * @default `/mcp`
   */
  path?: string;
  /**
   * Allowed `Origin` values; requests with another Origin get 403.
   * @default loopback origins only
   */
  allowedOrigins?: readonly string[] | 'any';
  /**
   * Allowed `Host` values (DNS-rebinding protection), with or without a port. Default: on a
   * loopback address, loopback host names only (`localhost`, `127.0.0.1`, `[::1]`); elsewhere, any.
   */
  allowedHosts?: readonly string[];
  /**
   * How long one operation on the log may take while a client waits (a write of its request, a
   * read), beyond a read's own wait; past it the client is answered 503 (a write's answer says the
   * request may still be written). A gateway cut from its brokers sees no error, only silence.
   * @default 20 s
   */
  logTimeoutMs?: number;
  /**
   * Largest request body, bytes.
   * @default 4 MiB
   */
  maxBodyBytes?: number;
  /**
   * Deepest nesting of objects and arrays in a message; deeper bodies get 400.
   * @default 64
   */
  maxJsonDepth?: number;
  /**
   * Messages in one JSON-RPC batch (2025-03-26); larger batches get 400.
   * @default 64
   */
  maxBatchMessages?: number;
  /**
   * Open SSE streams of one session on this replica; more get 429.
   * @default 32
   */
  maxStreamsPerSession?: number;
  /**
   * Open SSE streams of one subject (without authentication: of one client address other than
   * loopback) on this replica, of every kind — session streams, stateless responses, listens; more
   * get 429 before anything is written to the log.
   * @default 256
   */
  maxStreamsPerSubject?: number;
  /**
   * Live sessions one subject (without authentication: one client address other than loopback)
   * started on this replica — counted until `DELETE`, or until unused for the session TTL; another
   * `initialize` gets 429.
   * @default 256
   */
  maxSessionsPerSubject?: number;
  /**
   * Requests per second of one authenticated subject — without authentication, of one client
   * address other than loopback — with bursts up to twice that, on this replica; more get 429 with
   * `Retry-After`.
   * @default 100
   */
  maxRequestsPerSecond?: number;
  /**
   * Failed authentications of one client address per minute; past it, the address gets 429 with
   * `Retry-After` — before its token is even verified — until the minute is out.
   * @default 30
   */
  maxFailedAuthPerMinute?: number;
  /**
   * Proxies in front of the gateway whose `X-Forwarded-For` is believed: addresses, CIDR ranges
   * or `loopback` / `linklocal` / `uniquelocal` (Express's `trust proxy`). The client address past
   * them is what limits by address count by. Default: none — the socket's address counts.
   */
  trustedProxies?: readonly string[];
  /**
   * Connections this server holds at once; more are closed at accept.
   * @default 10,000
   */
  maxConnections?: number;
  /**
   * Time to receive a request's headers (408 after).
   * @default 10 s
   */
  headersTimeoutMs?: number;
  /**
   * Time to receive a whole request, body included (408 after).
   * @default 30 s
   */
  requestTimeoutMs?: number;
  /**
   * The session TTL the workers apply (`WorkerOptions.sessionTtlMs`): while a session has an open
   * stream on this replica, the gateway tells the session's worker so three times per TTL, so a
   * client that only listens does not expire.
   * @default 1 hour
   */
  sessionTtlMs?: number;
  /**
   * Largest `initialize` params (client info and capabilities), in bytes of JSON: they are kept
   * for the session's lifetime, so more get 400.
   * @default 64 KiB
   */
  maxInitializeBytes?: number;
  /**
   * Keep-alive comment interval on SSE streams.
   * @default 15 s
   */
  keepAliveMs?: number;
  /**
   * `retry:` hint sent to clients (priming, drain).
   * @default 1,000 ms
   */
  retryMs?: number;
  /**
   * How long a drain waits for the answers no client can resume elsewhere — a 2026-07-28
   * request's response (closing it would cancel the call) — before it ends them. Session streams
   * and listens end at once, with a resume point. Keep it below the termination grace period.
   * @default 20,000 ms
   */
  drainTimeoutMs?: number;
  /**
   * Bytes buffered for a slow SSE reader before its stream is closed for it to resume.
   * @default 1 MiB
   */
  maxBufferedBytes?: number;
  /**
   * Long-poll wait of the shared tails.
   * @default 500 ms
   */
  tailWaitMs?: number;
  /**
   * When a 2026-07-28 `tools/call` from a client that declares the Tasks extension becomes a task:
   * `never`, as the tool declares (`tool`: its module's `taskSupport`), or `always`.
   * @default 'tool'
   */
  tasks?: TaskMode;
  /**
   * Bearer-token hook: resolves the subject of a request, or undefined to answer 401. When set,
   * sessions are bound to their subject; another subject presenting the session id gets 404.
   */
  authenticate?: Authenticate;
  /**
   * OAuth 2.0 Protected Resource Metadata (RFC 9728), as the MCP authorization spec requires of a
   * server that takes OAuth tokens: served at `/.well-known/oauth-protected-resource[/<path>]` and
   * named in every 401's `WWW-Authenticate`.
   */
  resourceMetadata?: ResourceMetadataOptions;
  /**
   * Unexpected failures answered with 5xx.
   * @default stderr
   */
  onError?: (error: unknown) => void;
  /**
   * Things an operator should see that are not failures: an address refused for failed
   * authentications (never with its token), a subject at one of its caps.
   * @default stderr
   */
  onWarning?: (message: string, fields: Readonly<Record<string, unknown>>) => void;
  /**
   * Each resume decision this replica makes, after it is made (the `mcp.resume` span's data): for
   * a console or an audit. Called synchronously on the request's path, so keep it cheap.
   */
  onResume?: (observation: ResumeObservation) => void;
  now?: () => number;
}

/** One resume decision as an observer sees it. Generations are formatted (`epoch.attempt`). */
export interface ResumeObservation {
  readonly atMs: number;
  readonly session: SessionId;
  readonly outcome: 'resume' | 'reset' | 'invalid';
  readonly reason: string;
  /** The stream the client's `Last-Event-ID` named, when it verified. */
  readonly stream?: StreamId;
  /** The generation the client had seen, from its `Last-Event-ID`. */
  readonly claimedGeneration?: string;
  /** The stream's current generation, when it has one. */
  readonly generation?: string;
  /** Why, in words, for a reset or a refusal (never sent to the client). */
  readonly detail?: string;
}

export const GATEWAY_DEFAULTS = {
  path: '/mcp',
  maxBodyBytes: 4 * 1024 * 1024,
  logTimeoutMs: 20_000,
  maxJsonDepth: 64,
  maxBatchMessages: 64,
  maxStreamsPerSession: 32,
  maxStreamsPerSubject: 256,
  maxSessionsPerSubject: 256,
  maxRequestsPerSecond: 100,
  maxFailedAuthPerMinute: 30,
  maxConnections: 10_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  sessionTtlMs: 60 * 60 * 1000,
  maxInitializeBytes: 64 * 1024,
  keepAliveMs: 15_000,
  retryMs: 1_000,
  drainTimeoutMs: 20_000,
  maxBufferedBytes: 1024 * 1024,
  tailWaitMs: 500,
  tasks: 'tool',
} as const;

/** Options with their defaults applied, validated. */
export type CompiledGatewayOptions = GatewayOptions &
  Required<Pick<GatewayOptions, keyof typeof GATEWAY_DEFAULTS>>;

/** Applies the defaults and checks every number up front: a bad option throws a TypeError now. */
export function compileGatewayOptions(options: GatewayOptions): CompiledGatewayOptions {
  const o = { ...GATEWAY_DEFAULTS, ...options };
  positiveIntegers(o, [
    'maxBodyBytes',
    'logTimeoutMs',
    'maxJsonDepth',
    'maxBatchMessages',
    'maxStreamsPerSession',
    'maxStreamsPerSubject',
    'maxSessionsPerSubject',
    'maxRequestsPerSecond',
    'maxFailedAuthPerMinute',
    'maxConnections',
    'headersTimeoutMs',
    'requestTimeoutMs',
    'sessionTtlMs',
    'maxInitializeBytes',
    'keepAliveMs',
    'retryMs',
    'drainTimeoutMs',
    'maxBufferedBytes',
    'tailWaitMs',
  ]);
  if (
    o.trustedProxies !== undefined &&
    (!Array.isArray(o.trustedProxies) ||
      o.trustedProxies.some((proxy) => typeof proxy !== 'string' || proxy === ''))
  )
    throw invalidOption(
      'trustedProxies',
      'addresses, CIDR ranges or named ranges',
      o.trustedProxies,
    );
  if (o.group !== undefined && (typeof o.group.name !== 'string' || o.group.name === ''))
    throw invalidOption('group.name', "a consumer group's name", o.group.name);
  if (!TASK_MODES.includes(o.tasks)) throw invalidOption('tasks', TASK_MODES.join(' | '), o.tasks);
  return o;
}
