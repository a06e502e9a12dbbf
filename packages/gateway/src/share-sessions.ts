import { LRUCache } from 'lru-cache';
import type { SessionId } from '@tidemark/protocol';

export interface ShareSessionsOptions {
  readonly maxPerShare: number;
  /** A session nobody asked for this long is no longer counted (the workers expire it then). */
  readonly sessionTtlMs: number;
  readonly exempt: (share: string) => boolean;
  readonly now: () => number;
}

/**
 * The live sessions each share (subject, or address without authentication) started on this
 * replica, so one subject cannot fill the log and the workers' memory with sessions. Like the rate
 * limit, it is per replica and in memory: a session counts from its `initialize` until `DELETE`, or
 * until it went unused for the session TTL here. Shares are held in an LRU (an address-keyed
 * deployment has as many as it has clients).
 */
export class ShareSessions {
  private readonly byShare = new LRUCache<string, Map<SessionId, number>>({ max: 10_000 });

  constructor(private readonly options: ShareSessionsOptions) {}

  /** Counts a new session for `share`, or says no when it has as many as it may. */
  start(share: string, session: SessionId): boolean {
    if (this.options.exempt(share)) return true;
    const sessions = this.live(share);
    if (sessions.size >= this.options.maxPerShare) return false;
    sessions.set(session, this.options.now());
    this.byShare.set(share, sessions);
    return true;
  }

  /** The session was used: it stays counted for another TTL. */
  seen(share: string, session: SessionId): void {
    const sessions = this.byShare.get(share);
    if (sessions?.has(session) === true) sessions.set(session, this.options.now());
  }

  ended(share: string, session: SessionId): void {
    this.byShare.get(share)?.delete(session);
  }

  private live(share: string): Map<SessionId, number> {
    const sessions = this.byShare.get(share) ?? new Map<SessionId, number>();
    const since = this.options.now() - this.options.sessionTtlMs;
    for (const [session, seenMs] of sessions) if (seenMs < since) sessions.delete(session);
    return sessions;
  }
}
