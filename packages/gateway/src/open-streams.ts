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
  private readonly bySession = new Map<SessionId, Set<SseStream>>();

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
      const streams = this.bySession.get(session) ?? new Set<SseStream>();
      this.bySession.set(session, streams.add(sse));
    }
    recordLiveStreams(1);
    void sse.closed.then(() => this.forget(sse, session));
    return sse;
  }

  /** 429 when the session already has as many open streams here as it may. */
  refusalIfFull(session: SessionId): HttpRefusal | undefined {
    if ((this.bySession.get(session)?.size ?? 0) < this.maxPerSession) return undefined;
    return HttpRefusals.tooManyStreams(this.maxPerSession);
  }

  /** Sessions with at least one open stream here. */
  sessions(): SessionId[] {
    return [...this.bySession.keys()];
  }

  endSession(session: SessionId): void {
    for (const sse of this.bySession.get(session) ?? []) sse.end();
  }

  /** Ends every stream with a `retry:` hint, so clients reconnect (to another replica). */
  endAll(retryMs: number): void {
    for (const sse of this.all) sse.end(retryMs);
  }

  private forget(sse: SseStream, session: SessionId | undefined): void {
    this.all.delete(sse);
    if (session !== undefined) {
      const streams = this.bySession.get(session);
      streams?.delete(sse);
      if (streams?.size === 0) this.bySession.delete(session);
    }
    recordLiveStreams(-1);
  }
}
