import {
  decodeRequestRecord,
  SESSION_ENDED,
  type LogPort,
  type SessionId,
  type TopicNames,
  type RoutingKey,
} from '@tidemark/protocol';
import type { Visibility } from './visibility.js';
import { scanTail } from './tail-scan.js';

// What happened lately that the sessions table cannot show: plain 2026-07-28 calls (no session,
// and their stream heads are forgotten when they end) and sessions their clients ended (DELETE
// tombstones the session's record). Both are records of `requests`, so a bounded read of each
// partition's latest requests finds them; older ones are simply not listed.

/** Latest `requests` records read per partition for the overview. */
const RECENT_REQUESTS_PER_PARTITION = 2_000;
/** Rows listed at most in each table. */
const MAX_ROWS = 50;

interface StatelessCall {
  /** The call's routing key (its stream's key in the log). */
  readonly key: RoutingKey;
  readonly tool: string;
  readonly subject: string | undefined;
  readonly atMs: number;
}

interface EndedSession {
  readonly id: SessionId;
  readonly atMs: number;
}

export interface RecentActivity {
  readonly statelessCalls: readonly StatelessCall[];
  /** Only without authentication: an ended session's record (and its subject) is gone. */
  readonly endedSessions: readonly EndedSession[];
}

export async function recentActivity(
  log: LogPort,
  topics: TopicNames,
  partitionCount: number,
  visibility: Visibility,
): Promise<RecentActivity> {
  const statelessCalls: StatelessCall[] = [];
  const endedSessions: EndedSession[] = [];
  for (let partition = 0; partition < partitionCount; partition++) {
    const { records } = await scanTail(
      log,
      topics.requests,
      partition,
      RECENT_REQUESTS_PER_PARTITION,
      () => true,
    );
    for (const raw of records) {
      const decoded = decodeRequestRecord(raw);
      if (!decoded.ok) continue;
      const { record } = decoded;
      if (record.lane === 'control') {
        if (record.control === SESSION_ENDED && visibility.all)
          endedSessions.push({ id: record.session, atMs: raw.timestampMs });
        continue;
      }
      if (record.lane !== 'stateless') continue;
      const message = record.message as { method?: unknown; params?: { name?: unknown } };
      if (message.method !== 'tools/call' || typeof message.params?.name !== 'string') continue;
      if (!visibility.all && record.subject !== visibility.subject) continue;
      statelessCalls.push({
        key: record.key,
        tool: message.params.name,
        subject: record.subject,
        atMs: raw.timestampMs,
      });
    }
  }
  const newestFirst = (a: { atMs: number }, b: { atMs: number }) => b.atMs - a.atMs;
  return {
    statelessCalls: statelessCalls.sort(newestFirst).slice(0, MAX_ROWS),
    endedSessions: endedSessions.sort(newestFirst).slice(0, MAX_ROWS),
  };
}
