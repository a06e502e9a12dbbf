// Clients that call a ~2 s tool back to back for as long as a benchmark runs, each call recorded:
// when it started and ended, whether it failed (an error, or a result other than the exact one)
// and how many resets its stream carried. A call also fails when its progress was silently wrong
// (a splice, gap or repeat without a reset: test/e2e/checker.ts), not only its final text. The
// clients are the official SDK's, with its stream resumption (`Last-Event-ID`) on: a drained
// gateway's streams resume on another.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { classify, type Seen } from '../e2e/checker.ts';

export interface CallRecord {
  startAt: number;
  endAt: number;
  /** Why the call failed; undefined when it returned the exact result. */
  failed: string | undefined;
  resets: number;
  /** The client's session: what to look for in the processes' output when the call failed. */
  session: string;
}

const COUNT_TO = 20;
const EXPECTED = Array.from({ length: COUNT_TO }, (_, i) => i + 1).join(',');

export class CallLoad {
  readonly records: CallRecord[] = [];
  private readonly clients: Client[] = [];
  private readonly loops: Array<Promise<void>> = [];
  private stopping = false;
  private readonly url: string;
  private readonly count: number;
  /** Each call's tool time: `count` to 20 with this delay between numbers. */
  private readonly delayMs: number;

  // Plain fields, not parameter properties: the benchmarks run this under type stripping.
  constructor(url: string, count: number, delayMs = 100) {
    this.url = url;
    this.count = count;
    this.delayMs = delayMs;
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.count; i++) {
      const client = new Client({ name: `load-${i}`, version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(this.url), {
          reconnectionOptions: {
            initialReconnectionDelay: 100,
            maxReconnectionDelay: 1_000,
            reconnectionDelayGrowFactor: 1.5,
            maxRetries: 30,
          },
        }),
      );
      this.clients.push(client);
      this.loops.push(this.loop(client));
    }
  }

  private async loop(client: Client): Promise<void> {
    let current: CallRecord | undefined;
    let seen: Seen[] = [];
    client.fallbackNotificationHandler = (notification) => {
      if (notification.method === 'notifications/tidemark/reset' && current !== undefined) {
        current.resets++;
        const reason = (notification.params as { reason?: unknown } | undefined)?.reason;
        seen.push({ kind: 'reset', reason: String(reason) });
      }
      return Promise.resolve();
    };
    while (!this.stopping) {
      const record: CallRecord = {
        startAt: Date.now(),
        endAt: 0,
        failed: undefined,
        resets: 0,
        session: (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId ?? '',
      };
      current = record;
      seen = [];
      try {
        const result = await client.callTool(
          { name: 'count', arguments: { to: COUNT_TO, delayMs: this.delayMs } },
          {
            timeout: 120_000,
            onprogress: ({ progress, total }) =>
              seen.push({
                kind: 'progress',
                value: progress,
                ...(total === undefined ? {} : { total }),
              }),
          },
        );
        const text = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0]
          ?.text;
        if (result.isError === true) record.failed = `tool error: ${text}`;
        else if (text !== EXPECTED) record.failed = `wrong result: ${text}`;
        else {
          seen.push({ kind: 'result', numbers: text.split(',').map(Number) });
          const verdict = classify(COUNT_TO, seen);
          if (verdict.outcome === 'silently-wrong')
            record.failed = `silently wrong: ${verdict.why}`;
        }
      } catch (error) {
        record.failed = error instanceof Error ? error.message : String(error);
      }
      record.endAt = Date.now();
      this.records.push(record);
    }
  }

  totals(): { calls: number; failed: number; reset: number; failures: string[] } {
    const failed = this.records.filter((r) => r.failed !== undefined);
    return {
      calls: this.records.length,
      failed: failed.length,
      reset: this.records.filter((r) => r.resets > 0).length,
      failures: [...new Set(failed.map((r) => r.failed!))].slice(0, 5),
    };
  }

  /** Lets each client finish its call, then closes them. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    await Promise.all(this.clients.map((client) => client.close().catch(() => undefined)));
  }
}
