import type { SessionId, PartitionKey } from '@tidemark/protocol';
import { recordLiveSessions } from '@tidemark/otel';
import type { SessionRuntime } from './session-runtime.js';

/**
 * The sessions this worker holds an MCP server for, least recently used first, with the partition
 * each came from. Dropping one closes its server; its running calls are stopped (their streams stay
 * unfinished, re-run by the partition's next owner) and their slots are free.
 */
export class SessionCache {
  // Keyed by any owner's key, so that housekeeping may ask of one whether it is a busy session.
  private readonly entries = new Map<
    PartitionKey,
    { runtime: SessionRuntime; partition: number; stale?: true }
  >();

  constructor(private readonly maxSessions: number) {}

  /**
   * The session's runtime, now the most recently used; undefined (and dropped) when its modules
   * were replaced and no call of it runs any more — the next one is restored with the new ones.
   */
  async get(session: SessionId): Promise<SessionRuntime | undefined> {
    const entry = this.entries.get(session);
    if (entry === undefined) return undefined;
    if (entry.stale === true && entry.runtime.inflightCount === 0) {
      await this.drop(session);
      return undefined;
    }
    this.entries.delete(session);
    this.entries.set(session, entry);
    return entry.runtime;
  }

  /** Whether calls of the session run here now. */
  isBusy(session: PartitionKey): boolean {
    return (this.entries.get(session)?.runtime.inflightCount ?? 0) > 0;
  }

  /** Adds a started runtime; past `maxSessions` the least recently used idle ones go. */
  async add(session: SessionId, partition: number, runtime: SessionRuntime): Promise<void> {
    this.entries.set(session, { runtime, partition });
    recordLiveSessions(1);
    for (const [other, { runtime: held }] of [...this.entries]) {
      if (this.entries.size <= this.maxSessions) return;
      if (held.inflightCount === 0) await this.drop(other);
    }
  }

  /** Drops the session's MCP server (idle, ended or expired); a later request restores it. */
  async drop(session: PartitionKey): Promise<void> {
    const entry = this.entries.get(session);
    if (entry === undefined) return;
    this.entries.delete(session);
    recordLiveSessions(-1);
    await entry.runtime.close();
  }

  /** Drops every session of partitions that went to another worker. */
  async dropPartitions(partitions: readonly number[]): Promise<void> {
    for (const [session, { partition }] of [...this.entries])
      if (partitions.includes(partition)) await this.drop(session);
  }

  /**
   * The tool modules were replaced: each session's client is told its tools changed (on its
   * standalone stream), and each server is replaced once no call of it runs.
   */
  async modulesReplaced(): Promise<void> {
    for (const [session, entry] of [...this.entries]) {
      await entry.runtime.toolsChanged();
      if (entry.runtime.inflightCount === 0) await this.drop(session);
      else entry.stale = true;
    }
  }

  /** Drops servers with no call running and no activity since `idleBeforeMs`. */
  async dropIdle(idleBeforeMs: number): Promise<void> {
    for (const [session, { runtime }] of [...this.entries])
      if (runtime.inflightCount === 0 && runtime.idleSinceMs <= idleBeforeMs)
        await this.drop(session);
  }
}
