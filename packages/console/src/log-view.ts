import {
  AuditLog,
  restingCalls,
  SessionStore,
  StepJournal,
  StreamHeadStore,
  type WaitingStep,
  type StepRecord,
  type SessionRecord,
} from '@tidemark/log';
import {
  headKeyOfStep,
  decodeRequestRecord,
  foldStreamHead,
  formatGeneration,
  readStampedRecord,
  requestStreamId,
  sessionOfHeadKey,
  STANDALONE_STREAM,
  TASK_STREAM,
  type AuditRecord,
  type FoldEffect,
  type GenerationCause,
  type LogPort,
  type LogRecord,
  type PartitionKey,
  type StreamHead,
  type StreamId,
  type TaskStreamRecord,
  type TopicNames,
} from '@tidemark/protocol';
import { describeMessage, taskHistoryOf, traceIdOf, type TaskHistory } from './describe.js';
import { recentActivity, type RecentActivity } from './recent-activity.js';
import type { Visibility } from './visibility.js';
import { scanTail } from './tail-scan.js';

// What the console shows, read from the log and nothing else: sessions from the compacted
// `sessions` topic, calls from the stream heads in `streams`, and a call's timeline from the
// records of `events` (and its request from `requests`). Every read goes to the log's end of now,
// so a page shows what any replica would see; nothing is cached between pages.

export interface LogViewOptions {
  readonly log: LogPort;
  readonly topics: TopicNames;
  readonly partitionCount: number;
  /** How many of a partition's latest records a timeline reads at most. */
  readonly scanRecords: number;
  /** Idle sessions expire this long after their last activity (shown as their expiry). */
  readonly sessionTtlMs: number;
  /** Sessions listed at most, the most recently active first. */
  readonly maxSessions: number;
}

export interface SessionSummary {
  readonly id: PartitionKey;
  readonly kind: 'session' | 'task';
  readonly subject: string | undefined;
  readonly protocolVersion: string;
  readonly createdAtMs: number;
  /** When its record or one of its stream heads was last written. */
  readonly lastActivityMs: number;
  /** Sessions only: when it expires if nothing happens (tasks keep their own TTL). */
  readonly expiresAtMs: number | undefined;
  readonly streams: number;
}

export interface CallSummary {
  readonly stream: StreamId;
  /** `tools/call count`, `standalone stream`, `task` … */
  readonly label: string;
  readonly generation: string;
  readonly attempt: number;
  readonly cause: GenerationCause;
  readonly lastSeq: number;
  readonly finished: boolean;
  readonly traceId: string | undefined;
  readonly updatedAtMs: number;
}

/** One record of a call's stream as the log has it, and what folding it did. */
export interface TimelineEntry {
  readonly offset: bigint;
  readonly atMs: number;
  readonly generation: string;
  readonly attempt: number;
  readonly seq: number;
  readonly kind: 'generation-start' | 'message' | 'terminal';
  readonly cause: GenerationCause | undefined;
  readonly effect: FoldEffect;
  readonly summary: string;
}

export interface CallDetail extends CallSummary {
  readonly session: SessionSummary;
  readonly timeline: readonly TimelineEntry[];
  /** The timeline starts after the partition's oldest records (retention or the scan bound). */
  readonly truncated: boolean;
  readonly task: TaskHistory | undefined;
  /** The call's durable steps in its journal, in the order they were first journaled. */
  readonly steps: ReadonlyArray<{ readonly step: string } & StepRecord>;
}

/** Who may see what: with authentication on, a subject sees its own sessions only. */

export class LogView {
  private readonly sessions: SessionStore;
  private readonly heads: StreamHeadStore;
  private readonly steps: StepJournal;

  constructor(private readonly options: LogViewOptions) {
    const stores = {
      port: options.log,
      topics: options.topics,
      partitionCount: options.partitionCount,
      cacheEntries: 1_024,
    };
    this.sessions = new SessionStore({ ...stores, withInitialize: false });
    this.heads = new StreamHeadStore(stores);
    this.steps = new StepJournal(stores);
  }

  /**
   * The audit trail's latest calls (of each partition's `latest` records), the last to end first:
   * a subject's own, or everyone's for a viewer who sees all.
   */
  async audit(visibility: Visibility, latest: number): Promise<AuditRecord[]> {
    const { log, topics, partitionCount } = this.options;
    const trail = new AuditLog({ log, topic: topics.audit, partitionCount });
    const subject = visibility.all ? undefined : visibility.subject;
    return (await trail.read({ subject, latest })).reverse();
  }

  /** The calls asleep or waiting for a signal now, the soonest first (everyone's: operators'). */
  resting(): Promise<WaitingStep[]> {
    const { partitionCount } = this.options;
    return restingCalls(this.steps, this.heads, partitionCount, Date.now());
  }

  /** Sessions and tasks, the most recently active first. */
  async listSessions(visibility: Visibility): Promise<SessionSummary[]> {
    // Ranked from the tables' indexes (no value decoded), then only the most recent are read:
    // a log with a million sessions costs this page an index walk and `maxSessions` reads.
    const candidates: Array<{ id: PartitionKey; lastActivityMs: number; streams: number }> = [];
    for (let partition = 0; partition < this.options.partitionCount; partition++) {
      await Promise.all([this.sessions.catchUp(partition), this.heads.catchUp(partition)]);
      const activity = new Map<string, { at: number; streams: number }>();
      for (const [key, entry] of this.heads.entries(partition)) {
        if (headKeyOfStep(key) !== undefined) continue;
        const session = sessionOfHeadKey(key);
        const seen = activity.get(session) ?? { at: 0, streams: 0 };
        activity.set(session, {
          at: Math.max(seen.at, entry.timestampMs),
          streams: seen.streams + 1,
        });
      }
      for (const [id, entry] of this.sessions.entries(partition)) {
        const seen = activity.get(id);
        candidates.push({
          id,
          lastActivityMs: Math.max(entry.timestampMs, seen?.at ?? 0),
          streams: seen?.streams ?? 0,
        });
      }
    }
    candidates.sort((a, b) => b.lastActivityMs - a.lastActivityMs);
    const found: SessionSummary[] = [];
    for (const candidate of candidates) {
      if (found.length >= this.options.maxSessions) break;
      const record = await this.sessions.get(candidate.id);
      if (record === undefined || !visible(record, visibility)) continue;
      found.push(this.summarize(record, candidate.lastActivityMs, candidate.streams));
    }
    return found;
  }

  /** One session (or task) and its calls, or undefined when it is unknown or not visible. */
  async session(
    id: PartitionKey,
    visibility: Visibility,
  ): Promise<{ session: SessionSummary; calls: CallSummary[] } | undefined> {
    const record = await this.sessions.get(id);
    if (record === undefined || !visible(record, visibility)) return undefined;
    const partition = this.sessions.partitionOf(id);
    await this.heads.catchUp(partition);
    const keys = [...this.heads.entries(partition)].filter(
      ([key]) => sessionOfHeadKey(key) === id && headKeyOfStep(key) === undefined,
    );
    const labels = await this.requestLabels(id, partition);
    const calls: CallSummary[] = [];
    for (const [key, entry] of keys) {
      const stream = key.slice(id.length + 1) as StreamId;
      const traced = await this.heads.getTraced(id, stream);
      if (traced === undefined) continue;
      calls.push(
        callSummary(
          traced.head,
          labels.get(stream),
          traceIdOf(traced.traceHeaders),
          entry.timestampMs,
        ),
      );
    }
    calls.sort((a, b) => b.updatedAtMs - a.updatedAtMs);
    const lastActivity = Math.max(record.createdAtMs, ...calls.map((call) => call.updatedAtMs));
    return { session: this.summarize(record, lastActivity, calls.length), calls };
  }

  /** A call's stream: every record of it still in the log, folded as a reader would. */
  async call(
    id: PartitionKey,
    stream: StreamId,
    visibility: Visibility,
  ): Promise<CallDetail | undefined> {
    const found = await this.session(id, visibility);
    const call = found?.calls.find((candidate) => candidate.stream === stream);
    if (found === undefined || call === undefined) return undefined;
    const partition = this.sessions.partitionOf(id);
    const scan = await this.scan(
      this.options.topics.events,
      partition,
      (record) => record.key === id,
    );
    const timeline: TimelineEntry[] = [];
    const taskRecords: TaskStreamRecord[] = [];
    let head: StreamHead | undefined;
    for (const record of scan.records) {
      const stamped = readStampedRecord(record);
      if (stamped === undefined || stamped.stamp.stream !== stream) continue;
      const folded = foldStreamHead(head, stamped);
      head = folded.head;
      const { stamp } = stamped;
      timeline.push({
        offset: record.offset,
        atMs: record.timestampMs,
        generation: formatGeneration(stamp.generation),
        attempt: stamp.generation.attempt,
        seq: stamp.seq,
        kind: stamp.kind,
        cause: stamp.cause,
        effect: folded.effect,
        summary: describeMessage(stamp.kind, stamped.payload),
      });
      if (!folded.effect.startsWith('dropped') && folded.effect !== 'duplicate')
        taskRecords.push({
          kind: stamp.kind,
          attempt: stamp.generation.attempt,
          payload: stamped.payload,
          atMs: record.timestampMs,
        });
    }
    return {
      ...call,
      session: found.session,
      timeline,
      truncated: scan.truncated,
      task:
        stream === TASK_STREAM ? taskHistoryOf(found.session.createdAtMs, taskRecords) : undefined,
      steps: await this.steps.list(id, stream),
    };
  }

  /** Plain 2026-07-28 calls and ended sessions, from the latest `requests` records. */
  recentActivity(visibility: Visibility): Promise<RecentActivity> {
    const { log, topics, partitionCount } = this.options;
    return recentActivity(log, topics, partitionCount, visibility);
  }

  /** The subject a session is bound to, for filtering the live tail (undefined: unknown). */
  async ownerOf(id: PartitionKey): Promise<{ subject: string | undefined } | undefined> {
    const record = await this.sessions.get(id);
    return record === undefined ? undefined : { subject: record.subject };
  }

  private summarize(
    record: SessionRecord,
    lastActivityMs: number,
    streams: number,
  ): SessionSummary {
    const isTask = record.task !== undefined;
    return {
      id: record.id,
      kind: isTask ? 'task' : 'session',
      subject: record.subject,
      protocolVersion: record.protocolVersion,
      createdAtMs: record.createdAtMs,
      lastActivityMs,
      expiresAtMs: isTask ? undefined : lastActivityMs + this.options.sessionTtlMs,
      streams,
    };
  }

  /** `tools/call count` by stream, from the session's requests still in `requests`. */
  private async requestLabels(id: PartitionKey, partition: number): Promise<Map<StreamId, string>> {
    const labels = new Map<StreamId, string>([
      [STANDALONE_STREAM, 'standalone stream (GET)'],
      [TASK_STREAM, 'task'],
    ]);
    const scan = await this.scan(
      this.options.topics.requests,
      partition,
      (record) => record.key === id,
    );
    for (const record of scan.records) {
      const decoded = decodeRequestRecord(record);
      if (!decoded.ok || decoded.record.lane === 'control') continue;
      const message = decoded.record.message as {
        id?: unknown;
        method?: unknown;
        params?: { name?: unknown };
      };
      if (typeof message.method !== 'string') continue;
      const tool = typeof message.params?.name === 'string' ? ` ${message.params.name}` : '';
      const label = `${message.method}${message.method === 'tools/call' ? tool : ''}`;
      if (decoded.record.lane === 'stateless' && message.method === 'tools/call')
        labels.set(TASK_STREAM, label);
      if (typeof message.id === 'string' || typeof message.id === 'number')
        labels.set(requestStreamId(message.id), label);
    }
    return labels;
  }

  /** The records of a partition's last `scanRecords` offsets that pass `keep`. */
  private scan(topic: string, partition: number, keep: (record: LogRecord) => boolean) {
    return scanTail(this.options.log, topic, partition, this.options.scanRecords, keep);
  }
}

function visible(record: SessionRecord, visibility: Visibility): boolean {
  return visibility.all || record.subject === visibility.subject;
}

function callSummary(
  head: StreamHead,
  label: string | undefined,
  traceId: string | undefined,
  updatedAtMs: number,
): CallSummary {
  return {
    stream: head.stream,
    label: label ?? `stream ${head.stream}`,
    generation: formatGeneration(head.generation),
    attempt: head.generation.attempt,
    cause: head.cause,
    lastSeq: head.lastSeq,
    finished: head.terminal !== undefined,
    traceId,
    updatedAtMs,
  };
}
