import { checkPartitionPlacement, SessionStore, StreamHeadStore } from '@tidemark/log';
import {
  eventIdMinter,
  type Keyring,
  type LogIdentity,
  type LogPort,
  type PartitionKey,
  type StreamId,
  type TopicNames,
} from '@tidemark/protocol';
import { Access, isExemptShare } from './auth/index.js';
import { EventTails } from './delivery.js';
import type { CompiledGatewayOptions, GatewayOptions } from './gateway-options.js';
import { KeyMint } from './key-mint.js';
import { withDeadline } from './log-deadline.js';
import { OffsetsReader } from './offsets-reader.js';
import { OpenStreams } from './open-streams.js';
import { RequestProducer } from './request-producer.js';
import { ShareSessions } from './share-sessions.js';

/** What every handler of one gateway shares: its options, its view of the log, its open streams. */
export interface GatewayContext {
  readonly options: CompiledGatewayOptions;
  readonly now: () => number;
  /** The gateway's own failures (never a client's mistake). */
  readonly onError: (error: unknown) => void;
  readonly onWarning: NonNullable<GatewayOptions['onWarning']>;
  readonly port: LogPort;
  readonly topics: TopicNames;
  readonly keyring: Keyring;
  readonly partitionCount: number;
  /** The identity of `events`, carried in every event id. */
  readonly logIdentity: LogIdentity;
  readonly sessions: SessionStore;
  readonly heads: StreamHeadStore;
  readonly tails: EventTails;
  /** Offsets of `events` partitions, one request shared by the callers of a turn. */
  readonly eventOffsets: OffsetsReader;
  readonly streams: OpenStreams;
  /** The live sessions each subject started here (`maxSessionsPerSubject`). */
  readonly shareSessions: ShareSessions;
  readonly producer: RequestProducer;
  readonly access: Access;
  /** Mints the keys this gateway creates onto its partitions. */
  readonly keys: KeyMint;
}

export async function createGatewayContext(
  options: CompiledGatewayOptions,
  metadataUrl: string | undefined,
): Promise<GatewayContext> {
  const { topics, keyring } = options;
  const port = withDeadline(options.log, options.logTimeoutMs);
  const partitionCount = await port.partitionCount(topics.events);
  await checkPartitionPlacement(port, topics, partitionCount);
  const stores = { port, topics, partitionCount };
  const onWarning = options.onWarning ?? warnToStderr;
  return {
    options,
    now: options.now ?? Date.now,
    onError: options.onError ?? writeToStderr,
    onWarning,
    port,
    topics,
    keyring,
    partitionCount,
    logIdentity: await port.identity(topics.events),
    // A gateway needs a session's version and subject, not its initialize (the workers do).
    sessions: new SessionStore({ ...stores, withInitialize: false }),
    heads: new StreamHeadStore(stores),
    tails: new EventTails(port, topics.events, options.tailWaitMs),
    eventOffsets: new OffsetsReader(port, topics.events),
    streams: new OpenStreams(
      {
        keepAliveMs: options.keepAliveMs,
        maxBufferedBytes: options.maxBufferedBytes,
        retryMs: options.retryMs,
      },
      {
        maxPerSession: options.maxStreamsPerSession,
        maxPerShare: options.maxStreamsPerSubject,
        exempt: isExemptShare,
      },
    ),
    shareSessions: new ShareSessions({
      maxPerShare: options.maxSessionsPerSubject,
      sessionTtlMs: options.sessionTtlMs,
      exempt: isExemptShare,
      now: options.now ?? Date.now,
    }),
    producer: new RequestProducer(port, topics.requests, partitionCount, keyring),
    keys: new KeyMint(partitionCount),
    access: new Access({
      authenticate: options.authenticate,
      metadataUrl,
      scopes: options.resourceMetadata?.scopesSupported,
      maxRequestsPerSecond: options.maxRequestsPerSecond,
      maxFailedAuthPerMinute: options.maxFailedAuthPerMinute,
      onAuthFailures: (address, failures) =>
        onWarning('failed authentications: this address is refused for the rest of the minute', {
          address,
          failures,
        }),
    }),
  };
}

const writeToStderr: NonNullable<GatewayOptions['onError']> = (error) =>
  process.stderr.write(
    `tidemark gateway: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );

const warnToStderr: NonNullable<GatewayOptions['onWarning']> = (message, fields) =>
  process.stderr.write(`tidemark gateway: ${message} ${JSON.stringify(fields)}\n`);

/** The event ids of one stream of a session, on its partition, minted with this gateway's keys. */
export function streamMinter(
  ctx: GatewayContext,
  session: PartitionKey,
  partition: number,
  stream: StreamId,
): ReturnType<typeof eventIdMinter> {
  return eventIdMinter({
    logIdentity: ctx.logIdentity,
    keyring: ctx.keyring,
    partition,
    stream,
    session,
  });
}
