import type { Response } from 'express';
import { HttpRefusals, type HttpRefusal, type SessionId } from '@tidemark/protocol';
import { recordLiveStreams } from '@tidemark/otel';
import { SseStream, type SseOptions } from './sse.js';

/**
 * This replica's open SSE responses, all and by session: DELETE ends a session's, a drain ends
 * them all, the session-expiry touch names the sessions that have one, and a session may hold only
 * so many at once.
 */
export class OpenStreams {
  private readonly all = new Set<SseStream>();
  /** A session's streams: one (most sessions), or a set. */
  private readonly bySession = new Map<SessionId, SseStream | Set<SseStream>>();
  /** One timer for every stream's keep-alive, running while any is open. */
  private keepAlive: NodeJS.Timeout | undefined;

  constructor(
    private readonly sse: SseOptions,
    private readonly maxPerSession: number,
  ) {}

  get size(): number {
    return this.all.size;
  }

  /** Starts an SSE response; a session-lane stream carries its session's header. */
  open(res: Response, session: SessionId | undefined): SseStream {
    const headers: Record<string, string> =
      session === undefined ? {} : { 'Mcp-Session-Id': session };
    const sse = new SseStream(res, this.sse, headers);
    this.all.add(sse);
    if (session !== undefined) {
      const streams = this.bySession.get(session);
      this.bySession.set(
        session,
        streams === undefined
          ? sse
          : streams instanceof Set
            ? streams.add(sse)
            : new Set([streams, sse]),
      );
    }
    recordLiveStreams(1);
    sse.onClose(() => this.forget(sse, session));
    this.keepAlive ??= setInterval(() => this.sendKeepAlives(), this.sse.keepAliveMs / 2).unref();
    return sse;
  }

  /** A comment to every stream nothing was written to for half the keep-alive interval or more. */
  private sendKeepAlives(): void {
    const idleSince = performance.now() - this.sse.keepAliveMs / 2;
    for (const sse of this.all) if (sse.lastWriteMs <= idleSince) sse.keepAlive();
  }

  private streamsOf(session: SessionId): Iterable<SseStream> {
    const streams = this.bySession.get(session);
    return streams === undefined ? [] : streams instanceof Set ? streams : [streams];
  }

  /** 429 when the session already has as many open streams here as it may. */
  refusalIfFull(session: SessionId): HttpRefusal | undefined {
    if ([...this.streamsOf(session)].length < this.maxPerSession) return undefined;
    return HttpRefusals.tooManyStreams(this.maxPerSession);
  }

  /** Sessions with at least one open stream here. */
  sessions(): SessionId[] {
    return [...this.bySession.keys()];
  }

  endSession(session: SessionId): void {
    for (const sse of this.streamsOf(session)) sse.end();
  }

  /** Ends every stream with a `retry:` hint, so clients reconnect (to another replica). */
  endAll(retryMs: number): void {
    for (const sse of this.all) sse.end(retryMs);
  }

  private forget(sse: SseStream, session: SessionId | undefined): void {
    this.all.delete(sse);
    if (session !== undefined) {
      const streams = this.bySession.get(session);
      if (streams === sse) this.bySession.delete(session);
      else if (streams instanceof Set) {
        streams.delete(sse);
        if (streams.size === 1) this.bySession.set(session, [...streams][0]!);
      }
    }
    recordLiveStreams(-1);
    if (this.all.size === 0) {
      clearInterval(this.keepAlive);
      this.keepAlive = undefined;
    }
  }
}
