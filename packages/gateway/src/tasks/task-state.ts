import { finalMessage, isEvicted, readRange, type SessionRecord } from '@tidemark/log';
import {
  createdTask,
  foldStreamHead,
  foldTask,
  isTerminalTaskStatus,
  readStampedRecord,
  taskEventOf,
  taskSnapshotOf,
  TASK_STREAM,
  type TaskId,
  type StampedRecord,
  type StreamHead,
  type TaskEvent,
  type TaskState,
} from '@tidemark/protocol';
import type { GatewayContext } from '../gateway-context.js';

/** What a gateway finds under a task id for a subject. */
export type TaskLookup =
  | {
      readonly found: true;
      readonly state: TaskState;
      readonly record: SessionRecord;
      /** The task stream's records below this offset are reflected in `state`. */
      readonly position: bigint;
    }
  /** No such task for this subject (another subject's task looks exactly like this). */
  | { readonly found: false; readonly why: 'not found' | 'expired' };

/**
 * A task's status as any gateway reads it: its record (compacted `sessions`, bound to a subject),
 * then its stream's head (compacted `streams`), both read up to the high watermarks of now, so what
 * a worker recorded before answering is seen (read-your-writes across replicas). The worker keeps
 * the task's status in the head with every record that changes it, so a read costs the task, not
 * its partition's traffic. A head from before that holds none: then the records of the stream's
 * current generation are folded in order, as they were. Nothing is cached: the log is the truth.
 */
export async function readTask(
  ctx: GatewayContext,
  taskId: TaskId,
  subject: string | undefined,
): Promise<TaskLookup> {
  const record = await ctx.sessions.get(taskId);
  if (record?.task === undefined || record.subject !== subject)
    return { found: false, why: 'not found' };
  let state = createdTask(taskId, { atMs: record.createdAtMs, ...record.task });
  const head = await ctx.heads.get(taskId, TASK_STREAM);
  // The worker writes the stream's head before it answers with the task: without one, the task's
  // outcome was already forgotten (its retention passed).
  if (head === undefined) return { found: false, why: 'expired' };
  const kept = taskSnapshotOf(head.snapshot, taskId);
  if (kept !== undefined) {
    const ended = isTerminalTaskStatus(kept.status)
      ? undefined
      : await terminalOf(ctx, taskId, head, kept);
    const latest = ended === undefined ? kept : (foldTask(taskId, kept, ended).state ?? kept);
    return { found: true, state: latest, record, position: head.position };
  }
  const apply = (event: TaskEvent | undefined) => {
    if (event !== undefined) state = foldTask(taskId, state, event).state!;
  };
  const { records, upTo } = await currentGeneration(ctx, taskId, head);
  for (const { record: stamped, atMs } of records ?? [])
    apply(
      taskEventOf({
        kind: stamped.stamp.kind,
        attempt: stamped.stamp.generation.attempt,
        payload: stamped.payload,
        atMs,
      }),
    );
  // Events expired before the task's head: its outcome is in the head.
  if (records === undefined && head.terminal !== undefined)
    apply(
      taskEventOf({
        kind: 'terminal',
        attempt: head.generation.attempt,
        payload: head.terminal.payload,
        atMs: state.lastUpdatedAtMs,
      }),
    );
  return { found: true, state, record, position: upTo };
}

/**
 * The terminal event of a head whose snapshot was written before its end: by a worker from before,
 * or because the outcome was too large for the head (then it is read from the log).
 */
async function terminalOf(
  ctx: GatewayContext,
  taskId: TaskId,
  head: StreamHead,
  state: TaskState,
): Promise<TaskEvent | undefined> {
  if (head.terminal === undefined) return undefined;
  const partition = ctx.heads.partitionOf(taskId);
  return taskEventOf({
    kind: 'terminal',
    attempt: head.generation.attempt,
    payload: await finalMessage(ctx.port, ctx.topics.events, partition, taskId, head.terminal),
    atMs: state.lastUpdatedAtMs,
  });
}

/**
 * The records of the task stream's current generation (and of any newer one started meanwhile),
 * in log order, as a reader of the stream keeps them: superseded and post-terminal records
 * dropped; `records` undefined when the log no longer holds them.
 */
async function currentGeneration(
  ctx: GatewayContext,
  taskId: TaskId,
  head: StreamHead,
): Promise<{
  records: Array<{ record: StampedRecord; atMs: number }> | undefined;
  /** The records below this offset were read. */
  upTo: bigint;
}> {
  const partition = ctx.heads.partitionOf(taskId);
  const kept: Array<{ record: StampedRecord; atMs: number }> = [];
  let folded: StreamHead | undefined;
  let upTo = head.position;
  try {
    const { highWatermark } = await ctx.eventOffsets.read(partition);
    upTo = highWatermark;
    const range = { from: head.startOffset, until: highWatermark, key: taskId };
    for await (const raw of readRange(ctx.port, ctx.topics.events, partition, range)) {
      const record = readStampedRecord(raw);
      if (record?.stamp.stream !== TASK_STREAM) continue;
      const { head: next, effect } = foldStreamHead(folded, record);
      folded = next;
      if (['started', 'superseded', 'appended', 'gap', 'terminal'].includes(effect))
        kept.push({ record, atMs: raw.timestampMs });
    }
  } catch (error) {
    if (isEvicted(error)) return { records: undefined, upTo };
    throw error;
  }
  return { records: kept, upTo };
}
