// Official SDK clients that record what they see of each tool call, for the checker.
// (Runs under Node's type stripping too: the chaos runner imports it.)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
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
  timeoutMs?: number;
  /** Asked at the end: were events deleted while the call ran (the runner's own fault)? */
  logLost?: () => boolean;
}

export interface CheckedCall {
  readonly seen: Seen[];
  readonly verdict: Verdict;
}

/**
 * The official v2 client with quick reconnects, recording resets (`notifications/tidemark/reset`)
 * into the call in flight. One call at a time per client, so every reset belongs to that call.
 */
export class TrackedClient {
  readonly client: Client;
  private current: Seen[] | undefined;

  private constructor(client: Client) {
    this.client = client;
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
    try {
      const result = await this.client.callTool(
        {
          name: options.tool ?? 'count',
          arguments: { to: options.to, delayMs: options.delayMs, ...options.extra },
        },
        {
          timeout: options.timeoutMs ?? 120_000,
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
      if (result.isError === true) seen.push({ kind: 'error', message: text });
      else seen.push({ kind: 'result', numbers: text === '' ? [] : text.split(',').map(Number) });
    } catch (error) {
      seen.push({ kind: 'error', message: error instanceof Error ? error.message : String(error) });
    } finally {
      this.current = undefined;
    }
    return {
      seen,
      verdict: classify(options.to, seen, { logLost: options.logLost?.() ?? false }),
    };
  }

  close(): Promise<void> {
    return this.client.close().catch(() => undefined);
  }
}
