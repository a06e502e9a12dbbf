import type { Response } from 'express';
import { JsonText } from '@tidemark/protocol';

export interface SseOptions {
  /** Comment sent when nothing else was, so proxies keep the connection. */
  keepAliveMs: number;
  /** Bytes queued to a slow client beyond which the stream is closed (the client resumes). */
  maxBufferedBytes: number;
  /** `retry:` hint for 2025-11-25 clients, ms. */
  retryMs: number | undefined;
}

/**
 * One SSE response. Memory per stream is bounded: when a client reads slower than events arrive
 * and more than `maxBufferedBytes` wait in the socket buffer, the stream is closed — the client
 * resumes with `Last-Event-ID` and reads from the log at its own pace.
 */
export class SseStream {
  private keepAlive: NodeJS.Timeout | undefined;
  private ended = false;
  readonly closed: Promise<void>;

  constructor(
    private readonly res: Response,
    private readonly options: SseOptions,
    headers: Record<string, string>,
  ) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
      ...headers,
    });
    res.flushHeaders();
    this.closed = new Promise((resolve) => res.once('close', () => resolve()));
    void this.closed.then(() => this.stopKeepAlive());
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), options.keepAliveMs);
    this.keepAlive.unref();
  }

  get isOpen(): boolean {
    return !this.ended && !this.res.writableEnded && !this.res.destroyed;
  }

  /** The priming event of 2025-11-25: an id and empty data, plus the retry hint. */
  prime(id: string): void {
    const retry = this.options.retryMs === undefined ? '' : `retry: ${this.options.retryMs}\n`;
    this.write(`${retry}id: ${id}\ndata: \n\n`);
  }

  /** One `message` event; a message read from the log (`JsonText`) is written as it is. */
  event(id: string | undefined, data: unknown): void {
    const idLine = id === undefined ? '' : `id: ${id}\n`;
    const json = data instanceof JsonText ? data.text : JSON.stringify(data);
    this.write(`${idLine}event: message\ndata: ${json}\n\n`);
  }

  /** Writes what `fn` writes in one go (one syscall for a batch of events, not one each). */
  batch(fn: () => void): void {
    this.res.cork();
    try {
      fn();
    } finally {
      this.res.uncork();
    }
  }

  /** Ends the stream; with a retry hint so a client reconnects (drain, slow reader). */
  end(retryMs?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.stopKeepAlive();
    if (!this.res.writableEnded && !this.res.destroyed) {
      if (retryMs !== undefined) this.res.write(`retry: ${retryMs}\n\n`);
      this.res.end();
    }
  }

  private write(chunk: string): void {
    if (!this.isOpen) return;
    this.res.write(chunk);
    if (this.res.writableLength > this.options.maxBufferedBytes) this.end(this.options.retryMs);
  }

  private stopKeepAlive(): void {
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }
}
