// Official SDK clients that record what they see of each tool call, for the checker.
// (Runs under Node's type stripping too: the chaos runner imports it.)
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { classify, type Seen, type Verdict } from './checker.ts';

export interface CallOptions {
  /** `count` (default) or `flaky_count`. */
  tool?: string;
  to: number;
  delayMs: number;
  /** Extra arguments (flaky_count's failAt, failAttempts). */
  extra?: Record<string, unknown>;
  /** Called on each progress event the client sees (a test injects its fault here). */
  onProgress?: (value: number) => void;
  /** How long the client waits for an answer; a call not answered by then is lost. */
  timeoutMs?: number;
  /** Asked at the end: were this call's events deleted while it ran (the runner's own fault)? */
  logLost?: (during: CallWindow) => boolean;
  /** Asked at the end for each reset: could something during the call cause it (default yes)? */
  resetExcused?: (reason: string, during: CallWindow) => boolean;
}

/** When a call started and ended (epoch ms). */
export interface CallWindow {
  readonly startedMs: number;
  readonly endedMs: number;
}

export interface CheckedCall {
  readonly seen: Seen[];
  readonly verdict: Verdict;
  readonly window: CallWindow;
  /** The effect key the call's result names (a call with `effect: true`), when it answered one. */
  readonly effect?: string;
}

/**
 * The official v2 client with quick reconnects, recording resets (`notifications/tidemark/reset`)
 * into the call in flight. One call at a time per client, so every reset belongs to that call.
 */
export class TrackedClient {
  readonly client: Client;
  private current: Seen[] | undefined;

  /** What the client's transport reported (failed reconnects, dropped streams), for failure reports. */
  readonly transportErrors: string[] = [];
  /** Called when the transport reports a dropped stream (the call in flight decides what it means). */
  private onDrop: (() => void) | undefined;

  private constructor(client: Client) {
    this.client = client;
    client.onerror = (error) => {
      this.transportErrors.push(`${new Date().toISOString().slice(11, 23)} ${error.message}`);
      if (error.message.startsWith('SSE stream disconnected')) this.onDrop?.();
    };
    client.fallbackNotificationHandler = (notification) => {
      if (notification.method === 'notifications/tidemark/reset')
        this.current?.push({
          kind: 'reset',
          reason: String((notification.params as { reason?: unknown } | undefined)?.reason),
        });
      return Promise.resolve();
    };
  }

  static async connect(url: string, name: string, maxRetries = 40): Promise<TrackedClient> {
    const client = new Client({ name, version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        reconnectionOptions: {
          initialReconnectionDelay: 100,
          maxReconnectionDelay: 1_000,
          reconnectionDelayGrowFactor: 1.5,
          maxRetries,
        },
      }),
    );
    return new TrackedClient(client);
  }

  /** What this client has seen so far of the call in flight. */
  inFlight(): readonly Seen[] | undefined {
    return this.current;
  }

  get session(): string {
    return (this.client.transport as StreamableHTTPClientTransport).sessionId ?? '';
  }

  /** Calls a counting tool and classifies what this client saw of it. */
  async call(options: CallOptions): Promise<CheckedCall> {
    const seen: Seen[] = [];
    this.current = seen;
    const startedMs = Date.now();
    const timeout = options.timeoutMs ?? 120_000;
    // A call's stream cut before its first event id can never be resumed: the SDK does not
    // reconnect it and waits out its timeout. The client knows it at once (its transport says the
    // stream dropped, and it holds no id for the call), so it ends the call as failed — a real
    // application would too. A call that holds an id and still gets no answer is lost.
    let resumable = false;
    let effect: string | undefined;
    const cut = new AbortController();
    this.onDrop = () => {
      if (!resumable) cut.abort(new Error(CUT_BEFORE_FIRST_ID));
    };
    try {
      const result = await this.client.callTool(
        {
          name: options.tool ?? 'count',
          arguments: { to: options.to, delayMs: options.delayMs, ...options.extra },
        },
        {
          timeout,
          signal: cut.signal,
          onresumptiontoken: () => (resumable = true),
          onprogress: (p) => {
            seen.push({
              kind: 'progress',
              value: p.progress,
              ...(p.total === undefined ? {} : { total: p.total }),
            });
            options.onProgress?.(p.progress);
          },
        },
      );
      const text = (result.content as Array<{ type: string; text?: string }>)[0]?.text ?? '';
      effect = effectOf(result.structuredContent);
      if (result.isError === true) seen.push({ kind: 'error', message: text, answered: true });
      else seen.push({ kind: 'result', numbers: text === '' ? [] : text.split(',').map(Number) });
    } catch (error) {
      // A call this client ended because its stream was cut before its first event id failed,
      // as its client knows — the SDK reports that abort as a timeout too, so it is asked first.
      // The SDK's own timeout otherwise is no answer from the server: the call was accepted and
      // never answered (lost), not told that it failed.
      if (cut.signal.aborted) seen.push({ kind: 'error', message: CUT_BEFORE_FIRST_ID });
      else if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)
        seen.push({ kind: 'no-answer', afterMs: timeout });
      else
        seen.push({
          kind: 'error',
          message: describeError(error),
          ...(error instanceof ProtocolError ? { answered: true as const } : {}),
        });
    } finally {
      this.current = undefined;
      this.onDrop = undefined;
    }
    const window = { startedMs, endedMs: Date.now() };
    const { resetExcused } = options;
    return {
      seen,
      window,
      ...(effect === undefined ? {} : { effect }),
      verdict: classify(options.to, seen, {
        logLost: options.logLost?.(window) ?? false,
        ...(resetExcused ? { resetExcused: (reason) => resetExcused(reason, window) } : {}),
      }),
    };
  }

  close(): Promise<void> {
    return this.client.close().catch(() => undefined);
  }
}

/** The effect key a counting result names (`effect: true`), if any. */
export function effectOf(structured: unknown): string | undefined {
  const effect = (structured as { effect?: unknown } | undefined)?.effect;
  return typeof effect === 'string' ? effect : undefined;
}

const CUT_BEFORE_FIRST_ID = 'the stream was cut before its first event id: nothing to resume from';

/** An error's message with its causes (`fetch failed` says little; its cause says why). */
function describeError(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e !== undefined && parts.length < 4;) {
    if (e instanceof Error) {
      const code = (e as { code?: unknown }).code;
      parts.push(typeof code === 'string' ? `${e.message} [${code}]` : e.message);
      e = e.cause;
    } else {
      parts.push(typeof e === 'string' ? e : JSON.stringify(e));
      break;
    }
  }
  return parts.join(': ');
}
