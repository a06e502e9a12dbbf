import type { Response } from 'express';
import { type SessionId } from '@tidemark/protocol';
import { HttpRefusals, type HttpRefusal } from './http/http-refusals.js';
import { recordLiveStreams } from '@tidemark/otel';
import { SseStream, type SseOptions } from './http/sse.js';

/**
 * This replica's open SSE responses, all and by session: DELETE ends a session's, a drain ends
 * them all, the session-expiry touch names the sessions that have one, and a session may hold only
 * so many at once.
 */
export class OpenStreams {
  private readonly all = new Set<SseStream>();
  /** Streams no client can resume elsewhere (a stateless request's answer): a drain waits for them. */
  private readonly unresumable = new Set<SseStream>();
  /** A session's streams: one (most sessions), or a set. */
  private readonly bySession = new Map<SessionId, SseStream | Set<SseStream>>();
  /** Open streams of each share (subject, or address without authentication) that has one. */
  private readonly byShare = new Map<string, number>();
  /** One timer for every stream's keep-alive, running while any is open. */
  private keepAlive: NodeJS.Timeout | undefined;
  /** Set by a drain: the `retry:` hint a resumable stream opened from then on ends with. */
  private drainRetryMs: number | undefined;

  constructor(
    private readonly sse: SseOptions,
    private readonly limits: {
      readonly maxPerSession: number;
      readonly maxPerShare: number;
      /** Shares no cap applies to (this machine's own unauthenticated clients). */
      readonly exempt: (share: string) => boolean;
    },
  ) {}

  get size(): number {
    return this.all.size;
  }

  /**
   * Starts an SSE response of `share` (every kind: a session's, a stateless request's, a listen);
   * a session-lane stream carries its session's header.
   */
  open(
    res: Response,
    session: SessionId | undefined,
    share: string,
    { resumable = true }: { resumable?: boolean } = {},
  ): SseStream {
    const headers: Record<string, string> =
      session === undefined ? {} : { 'Mcp-Session-Id': session };
    const sse = new SseStream(res, this.sse, headers);
    this.all.add(sse);
    if (!resumable) this.unresumable.add(sse);
    // Opened while draining: its priming event gives the client a point to resume from elsewhere.
    else if (this.drainRetryMs !== undefined) sse.endAfterPriming(this.drainRetryMs);
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
    this.byShare.set(share, (this.byShare.get(share) ?? 0) + 1);
    recordLiveStreams(1);
    sse.onClose(() => this.forget(sse, session, share));
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

  /** 429 when the share, or the session, already has as many open streams here as it may. */
  refusalIfFull(session: SessionId | undefined, share: string): HttpRefusal | undefined {
    const { maxPerSession, maxPerShare, exempt } = this.limits;
    if ((this.byShare.get(share) ?? 0) >= maxPerShare && !exempt(share))
      return HttpRefusals.tooManySubjectStreams(maxPerShare);
    if (session === undefined || [...this.streamsOf(session)].length < maxPerSession)
      return undefined;
    return HttpRefusals.tooManyStreams(maxPerSession);
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

  /**
   * A drain: ends every stream a client can resume elsewhere (with a `retry:` hint), and every
   * resumable one opened from now on once it is primed; the others go on.
   */
  drain(retryMs: number): void {
    this.drainRetryMs = retryMs;
    for (const sse of this.all) if (!this.unresumable.has(sse)) sse.end(retryMs);
  }

  private forget(sse: SseStream, session: SessionId | undefined, share: string): void {
    this.all.delete(sse);
    this.unresumable.delete(sse);
    const left = (this.byShare.get(share) ?? 1) - 1;
    if (left === 0) this.byShare.delete(share);
    else this.byShare.set(share, left);
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
