import { PartitionTail, SessionStore } from '@tidemark/log';
import {
  decodeStamp,
  newSessionId,
  partitionForSession,
  requestStreamId,
  StreamCursor,
  type LogPort,
  type RequestId,
  type SessionId,
  type TopicNames,
} from '@tidemark/protocol';

/** What a client saw on one stream: messages, and the resets it was told of. */
export type Seen =
  | { kind: 'reset'; reason: string }
  | { kind: 'message'; message: Record<string, unknown>; final: boolean };

/**
 * Plays the gateway's part against the log, for worker tests before the gateway exists: writes the
 * session and the client's messages to `requests`, and reads a stream back from `events` with the
 * same delivery rules (`StreamCursor`) a gateway applies.
 */
export class LogClient {
  readonly session: SessionId = newSessionId();
  readonly partition: number;
  private readonly sessions: SessionStore;
  private readonly tail: PartitionTail;
  // Plain fields, not parameter properties: the benchmarks run this under Node's type stripping.
  private readonly port: LogPort;
  private readonly topics: TopicNames;

  constructor(port: LogPort, topics: TopicNames, partitionCount: number) {
    this.port = port;
    this.topics = topics;
    this.partition = partitionForSession(this.session, partitionCount);
    this.sessions = new SessionStore({ port, topics, partitionCount });
    this.tail = new PartitionTail({
      port,
      topic: topics.events,
      partition: this.partition,
      maxWaitMs: 100,
    });
  }

  async initialize(): Promise<void> {
    const initialize = {
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: { form: {} } },
        clientInfo: { name: 'log-client', version: '1' },
      },
    };
    await this.sessions.create({
      id: this.session,
      protocolVersion: '2025-11-25',
      initialize,
      createdAtMs: Date.now(),
    });
    const answer = this.watch('init');
    await this.send(initialize);
    await answer.done;
    await this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Sends a tools/call and starts watching its stream from the beginning of the log. */
  call(
    id: RequestId,
    name: string,
    args: Record<string, unknown>,
    progress = true,
  ): { seen: Seen[]; done: Promise<Seen[]>; sent: Promise<void> } {
    const watching = this.watch(id);
    const sent = this.send({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: {
        name,
        arguments: args,
        ...(progress ? { _meta: { progressToken: `p-${String(id)}` } } : {}),
      },
    });
    return { ...watching, sent };
  }

  async send(message: Record<string, unknown>): Promise<void> {
    await this.port.append(this.topics.requests, [
      { partition: this.partition, key: this.session, value: Buffer.from(JSON.stringify(message)) },
    ]);
  }

  /** Everything the client would see on a request's stream, until its final message. */
  watch(id: RequestId, onSeen?: (seen: Seen) => void): { seen: Seen[]; done: Promise<Seen[]> } {
    const stream = requestStreamId(id);
    const cursor = new StreamCursor<Record<string, unknown>>({
      generation: undefined,
      nextSeq: 1,
      clientHasEvents: false,
      fromOffset: 0n,
    });
    const seen: Seen[] = [];
    const push = (entry: Seen) => {
      seen.push(entry);
      onSeen?.(entry);
    };
    const done = new Promise<Seen[]>((resolve, reject) => {
      const subscription = this.tail.subscribe(0n, {
        onRecords: (records) => {
          for (const record of records) {
            if (record.key !== this.session) continue;
            const decoded = decodeStamp(record.headers);
            if (!decoded.ok || decoded.stamp.stream !== stream) continue;
            const payload =
              record.value === null
                ? undefined
                : (JSON.parse(Buffer.from(record.value).toString()) as Record<string, unknown>);
            const step = cursor.accept({
              offset: record.offset,
              stamp: decoded.stamp,
              ...(payload === undefined ? {} : { payload }),
            });
            if (step.kind === 'reset-only') push({ kind: 'reset', reason: step.reason });
            if (step.kind !== 'deliver') continue;
            if (step.resetBefore !== undefined)
              push({ kind: 'reset', reason: step.resetBefore.reason });
            push({ kind: 'message', message: step.record.payload ?? {}, final: step.final });
            if (step.final) {
              subscription.close();
              resolve(seen);
            }
          }
        },
        // Closing the client at the end of a test ends its watches quietly.
        onError: (error) => (error.code === 'TIDEMARK_CLOSED' ? resolve(seen) : reject(error)),
      });
    });
    return { seen, done };
  }

  close(): void {
    this.tail.close();
  }
}

/** Progress numbers after the last reset, and the final result's text. */
export function outcome(seen: readonly Seen[]): {
  resets: string[];
  progress: number[];
  text: string | undefined;
  isError: boolean;
} {
  const resets = seen.flatMap((s) => (s.kind === 'reset' ? [s.reason] : []));
  const lastReset = seen.map((s) => s.kind).lastIndexOf('reset');
  const after = seen.slice(lastReset + 1);
  const progress = after.flatMap((s) =>
    s.kind === 'message' && s.message['method'] === 'notifications/progress'
      ? [(s.message['params'] as { progress: number }).progress]
      : [],
  );
  const final = after.find((s) => s.kind === 'message' && s.final);
  const result =
    final?.kind === 'message'
      ? (final.message['result'] as
          { content?: Array<{ text?: string }>; isError?: boolean } | undefined)
      : undefined;
  return { resets, progress, text: result?.content?.[0]?.text, isError: result?.isError === true };
}
