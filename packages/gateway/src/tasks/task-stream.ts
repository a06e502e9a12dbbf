import type { Response } from 'express';
import { readRange, TaskEventNumbering, type TaskStreamEvent } from '@tidemark/log';
import {
  declaresTasks,
  detailedTask,
  isTerminalTaskStatus,
  JsonRpcErrorCodes,
  parseTaskId,
  TASK_EVENT_NOTIFICATION,
  TASK_STREAM,
  type RequestId,
  type TaskId,
} from '@tidemark/protocol';
import type { Asker } from '../auth/index.js';
import type { GatewayContext } from '../gateway-context.js';
import { readTask } from './task-state.js';

// `tasks/stream` (SEP-2694's shape): a task's events — every message its executions recorded,
// then its outcome — numbered from 0 across executions, replayed from any gateway after the
// client's `after`, then followed live until the task ends; the answer is the task as `tasks/get`
// gives it. Events no longer retained are said (`events_gone`, with the earliest still held),
// never skipped.

/** A terminal record went by before the head holding it: the worker writes that head just after. */
const HEAD_LAG_RETRY_MS = 25;

interface StreamRequest {
  readonly id: RequestId;
  readonly params?: Record<string, unknown>;
}

export async function handleTaskStream(
  ctx: GatewayContext,
  res: Response,
  request: StreamRequest,
  asker: Asker,
): Promise<void> {
  const refuse = (error: { code: number; message: string; data?: unknown }) =>
    void res.status(200).json({ jsonrpc: '2.0', id: request.id, error });
  const asked = streamParams(request.params);
  if ('error' in asked) return refuse(asked.error);
  const { taskId, after } = asked;
  const task = await readTask(ctx, taskId, asker.auth?.subject);
  const head = task.found ? await ctx.heads.get(taskId, TASK_STREAM) : undefined;
  if (!task.found || head === undefined) return refuse(invalid('Task not found'));
  const reader = await TaskEventReader.open(ctx, taskId, head, after);
  const replayed = await reader.next();
  if (after + 1 < reader.earliestSeq)
    return refuse({
      code: JsonRpcErrorCodes.eventsGone,
      message: 'events_gone',
      data: { earliestSeq: reader.earliestSeq },
    });
  const sse = ctx.streams.open(res, undefined, asker.share);
  let last = after;
  const send = (events: readonly TaskStreamEvent[]) => {
    for (const event of events.filter((e) => e.seq > last)) {
      last = event.seq;
      const params = { taskId, ...event };
      sse.event(undefined, { jsonrpc: '2.0', method: TASK_EVENT_NOTIFICATION, params });
    }
  };
  send(replayed);
  if (!reader.finished && sse.isOpen) await reader.follow(send, sse.closed);
  if (!sse.isOpen) return;
  const final = await outcomeOf(ctx, taskId, asker);
  const result = final.found ? detailedTask(final.state) : { resultType: 'complete' };
  sse.event(undefined, { jsonrpc: '2.0', id: request.id, result });
  sse.end();
}

/** The task and the last seq the client has (-1: none), or the refusal of bad params. */
function streamParams(
  params: Record<string, unknown> | undefined,
): { taskId: TaskId; after: number } | { error: { code: number; message: string } } {
  if (!declaresTasks(params))
    return {
      error: {
        code: JsonRpcErrorCodes.missingRequiredClientCapability,
        message: 'tasks/stream needs the Tasks extension declared',
      },
    };
  const raw = params?.['taskId'];
  const taskId = typeof raw === 'string' ? parseTaskId(raw) : undefined;
  const after = params?.['after'] ?? -1;
  if (taskId === undefined) return { error: invalid('taskId must be a task id this server gave') };
  if (typeof after !== 'number' || !Number.isSafeInteger(after) || after < -1)
    return { error: invalid('after must be an integer, at least -1') };
  return { taskId, after };
}

function invalid(message: string): { code: number; message: string } {
  return { code: JsonRpcErrorCodes.invalidParams, message: `Invalid params: ${message}` };
}

/**
 * The finished task, as `tasks/get` gives it. Its terminal record is read before its worker has
 * written the head that holds it (just after): read again shortly, a few times.
 */
async function outcomeOf(ctx: GatewayContext, taskId: TaskId, asker: Asker) {
  for (let attempt = 0; ; attempt++) {
    const task = await readTask(ctx, taskId, asker.auth?.subject);
    if (!task.found || isTerminalTaskStatus(task.state.status) || attempt >= 40) return task;
    await new Promise((resolve) => setTimeout(resolve, HEAD_LAG_RETRY_MS));
  }
}

/** Reads one task's stream from its first record on, numbering its events. */
class TaskEventReader {
  private constructor(
    private readonly ctx: GatewayContext,
    private readonly taskId: TaskId,
    private readonly partition: number,
    private readonly numbering: TaskEventNumbering,
    private position: bigint,
    /** Where the stored head says the stream ended, when it had when the reader opened. */
    private readonly endedAt: bigint | undefined,
  ) {}

  /**
   * A reader for a client that has the events up to `after`: from the stored head's position when
   * the head accounts for all of them (a resume reads only what was written since — security
   * review M4), else from the stream's first record (or the log start past it).
   */
  static async open(
    ctx: GatewayContext,
    taskId: TaskId,
    head: NonNullable<Awaited<ReturnType<GatewayContext['heads']['get']>>>,
    after: number,
  ): Promise<TaskEventReader> {
    const partition = ctx.heads.partitionOf(taskId);
    const { logStartOffset } = await ctx.port.offsets(ctx.topics.events, partition);
    const next = TaskEventNumbering.nextSeqAfter(head);
    if (next !== undefined && after + 1 >= next && head.position >= logStartOffset) {
      const numbering = TaskEventNumbering.continuing(head);
      return new TaskEventReader(
        ctx,
        taskId,
        partition,
        numbering,
        head.position,
        head.terminal?.offset,
      );
    }
    const first = head.firstOffset ?? head.startOffset;
    const from = first < logStartOffset ? logStartOffset : first;
    const numbering = new TaskEventNumbering(head, from);
    return new TaskEventReader(ctx, taskId, partition, numbering, from, head.terminal?.offset);
  }

  get earliestSeq(): number {
    return this.numbering.earliestSeq;
  }

  /** Its terminal record was read — or read past (evicted: the outcome is in the head). */
  get finished(): boolean {
    return this.numbering.finished || (this.endedAt !== undefined && this.position > this.endedAt);
  }

  /** The events recorded since the last read, up to the end of the log now. */
  async next(): Promise<TaskStreamEvent[]> {
    // Ended before where reading starts (a stored head with its outcome): nothing after counts.
    if (this.numbering.finished) return [];
    const { port, topics } = this.ctx;
    const { highWatermark } = await port.offsets(topics.events, this.partition);
    const events: TaskStreamEvent[] = [];
    const range = {
      from: this.position,
      until: highWatermark,
      key: this.taskId,
      evicted: 'skip',
    } as const;
    for await (const record of readRange(port, topics.events, this.partition, range))
      events.push(...this.numbering.read(record));
    this.position = highWatermark;
    return events;
  }

  /**
   * Follows the task live from where `next` left off, on this gateway's shared tail of the
   * partition (one reader for every stream on it, rather than one per follower), until its
   * terminal record, the client leaving, or the tail failing (records gone, the gateway
   * draining): the answer then says where the task is, and `after` resumes it.
   */
  follow(
    send: (events: readonly TaskStreamEvent[]) => void,
    closed: Promise<unknown>,
  ): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        subscription?.close();
        resolve();
      };
      let subscription: { close(): void } | undefined;
      try {
        subscription = this.ctx.tails.tail(this.partition).subscribe(this.position, {
          onRecords: (records) => {
            for (const record of records) {
              this.position = record.offset + 1n;
              if (record.key === this.taskId) send(this.numbering.read(record));
            }
            if (this.finished) done();
          },
          onError: done,
        });
      } catch {
        return resolve(); // the gateway is draining: its tails are closed
      }
      void closed.then(done);
    });
  }
}
