import type { Response } from 'express';
import { JsonText } from '@tidemark/protocol';
import { sseComment, sseFrame, sseMessageBytes } from './sse-frames.js';

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
 * resumes with `Last-Event-ID` and reads from the log at its own pace. A gateway holds thousands
 * of these: no timer or promise of its own (`OpenStreams` sends the keep-alives of all of them).
 */
export class SseStream {
  private ended = false;
  private endOnPrimeRetryMs: number | undefined;
  private closedAt: Promise<void> | undefined;
  /** While `batch` runs, the frames written, sent as one when it returns. */
  private batched: Buffer[] | undefined;
  private batchedBytes = 0;
  /** When something was last written (ms, monotonic): a keep-alive goes to idle streams only. */
  lastWriteMs = performance.now();
  /**
   * Set while a replay is written at the client's pace (`whenWritable` between reads): the
   * slow-client cut is for live events, which cannot wait; a paced replay is bounded by one read.
   */
  paced = false;

  constructor(
    private readonly res: Response,
    private readonly options: SseOptions,
    headers: Record<string, string>,
  ) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      // A draining replica said close: the client's next request goes to another one.
      Connection: res.getHeader('Connection') === 'close' ? 'close' : 'keep-alive',
      'X-Accel-Buffering': 'no',
      ...headers,
    });
    res.flushHeaders();
  }

  /** Calls `listener` once the response is closed (by either side). */
  onClose(listener: () => void): void {
    if (this.res.closed) queueMicrotask(listener);
    else this.res.once('close', listener);
  }

  /** Resolves once the response is closed. */
  get closed(): Promise<void> {
    this.closedAt ??= new Promise((resolve) => this.onClose(resolve));
    return this.closedAt;
  }

  /**
   * Undefined when the client keeps up; else (the response asked to wait: its buffer is past the
   * high-water mark) resolves when it drained or closed. A reader that can wait (a replay) waits,
   * instead of being cut as a slow client.
   */
  whenWritable(): Promise<void> | undefined {
    if (!this.isOpen || !this.res.writableNeedDrain) return undefined;
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once('drain', done);
      this.res.once('close', done);
    });
  }

  /** A comment, so proxies keep a connection nothing was written to for a while. */
  keepAlive(): void {
    this.write(sseComment('keep-alive'));
  }

  get isOpen(): boolean {
    return !this.ended && !this.res.writableEnded && !this.res.destroyed;
  }

  /** The priming event of 2025-11-25: an id and empty data, plus the retry hint. */
  prime(id: string): void {
    const retry = this.options.retryMs === undefined ? '' : `retry: ${this.options.retryMs}\n`;
    this.write(`${retry}${sseFrame({ id, data: '' })}`);
    if (this.endOnPrimeRetryMs !== undefined) this.end(this.endOnPrimeRetryMs);
  }

  /** Ends the stream (with this `retry:` hint) once it is primed: its client resumes elsewhere. */
  endAfterPriming(retryMs: number): void {
    this.endOnPrimeRetryMs = retryMs;
  }

  /** One `message` event; a message read from the log (`JsonText`) is written as its bytes. */
  event(id: string | undefined, data: unknown): void {
    if (data instanceof JsonText) this.write(sseMessageBytes(id, data.bytes));
    else this.write(sseFrame({ id, event: 'message', data: JSON.stringify(data) }));
  }

  /**
   * Writes what `fn` writes in one go: its frames joined into one buffer, one write to the
   * response (one HTTP chunk, one syscall) for a batch of events, not one each.
   */
  batch(fn: () => void): void {
    if (this.batched !== undefined) return fn();
    this.batched = [];
    try {
      fn();
    } finally {
      this.flushBatch();
    }
  }

  /** Ends the stream; with a retry hint so a client reconnects (drain, slow reader). */
  end(retryMs?: number): void {
    if (this.ended) return;
    this.flushBatch(); // what a batch wrote before its stream ended goes first
    this.ended = true;
    if (!this.res.writableEnded && !this.res.destroyed) {
      if (retryMs !== undefined) this.res.write(`retry: ${retryMs}\n\n`);
      this.res.end();
    }
  }

  private flushBatch(): void {
    const frames = this.batched;
    if (frames === undefined) return;
    this.batched = undefined;
    const bytes = this.batchedBytes;
    this.batchedBytes = 0;
    if (frames.length > 0)
      this.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames, bytes));
  }

  private write(chunk: string | Buffer): void {
    if (!this.isOpen) return;
    if (this.batched !== undefined) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      this.batched.push(bytes);
      this.batchedBytes += bytes.length;
      return;
    }
    this.lastWriteMs = performance.now();
    this.res.write(chunk);
    if (!this.paced && this.res.writableLength > this.options.maxBufferedBytes)
      this.end(this.options.retryMs);
  }
}
