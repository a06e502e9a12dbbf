import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/server';
import type { SessionRecord } from '@tidemark/log';
import {
  createTaskResult,
  createdTask,
  foldTask,
  JsonRpcErrorCodes,
  STATELESS_PROTOCOL_VERSION,
  TASK_ANSWERED_METHOD,
  TASK_CANCELLED_METHOD,
  TASK_INPUT_METHOD,
  TASK_STREAM,
  taskEventOf,
  taskSnapshotOf,
  type StreamHead,
  type StreamId,
  type TaskEvent,
  type TaskState,
} from '@tidemark/protocol';
import { settledHead, type LaneContext, type StatelessRequest } from '../calls/index.js';
import { Asleep, CallExecution, decideRun, invokeStateless, notOwned } from '../execution/index.js';
import { inputRequiredOf, nextRound } from './input-rounds.js';

type TaskRecord = SessionRecord & { task: NonNullable<SessionRecord['task']> };

/** Why a task stops before its tool answered. */
type StopReason = 'cancelled' | 'expired';

/** Input the task waits for: its keys (as the client sees them) → the tool's own keys. */
interface Waiting {
  readonly keys: ReadonlyMap<string, string>;
  readonly answers: Map<string, unknown>;
  readonly resolve: (answers: Record<string, unknown> | undefined) => void;
}

/**
 * A task of the Tasks extension on the worker that owns its key. It is created by records in the
 * log before the client hears of it — the task record (compacted `sessions`, bound to the subject)
 * and its stream's first generation — and then runs in that stream (`TASK_STREAM` under the task
 * id): each execution a generation, input the tool asks for (multi-round-trip `inputRequired`) a
 * record the client answers through `tasks/update`, the outcome its terminal record. Any gateway
 * folds those records into the task's status. A worker that takes the partition over runs the
 * task again as the next generation.
 */
export class TaskExecution {
  private readonly abort = new AbortController();
  private stopReason: StopReason | undefined;
  private run: CallExecution | undefined;
  private waiting: Waiting | undefined;
  private finished = false;
  private abandoned = false;
  /**
   * The task's status as this worker recorded it: kept in the task stream's head with each record
   * that changes it, so `tasks/get` reads the head, not the partition.
   */
  private state: TaskState | undefined;

  constructor(
    private readonly lane: LaneContext,
    private readonly request: StatelessRequest,
    /** The stream of the `tools/call` that created the task: it ends with the CreateTaskResult. */
    private readonly callStream: StreamId,
  ) {}

  /** Creates the task, answers the call with it (then `onAnswered`), and runs it. */
  async create(callHead: StreamHead | undefined, onAnswered: () => void): Promise<boolean> {
    const { key, subject, claim } = this.request;
    const { taskTtlMs, taskPollIntervalMs } = this.lane.options;
    const record: TaskRecord = {
      id: key,
      protocolVersion: STATELESS_PROTOCOL_VERSION,
      initialize: null,
      ...(subject === undefined ? {} : { subject }),
      createdAtMs: Date.now(),
      task: { ttlMs: taskTtlMs, pollIntervalMs: taskPollIntervalMs },
      ...(claim === undefined ? {} : { idempotency: claim }),
    };
    await this.lane.stores.sessions.create(record);
    this.state = createdState(record);
    await this.begin(undefined);
    await this.answerCall(record, callHead);
    onAnswered();
    await this.taskSlot();
    await this.execute(record);
    return true;
  }

  /** Runs a task its previous worker did not finish, as its next generation (or fails it). */
  async resume(record: SessionRecord, callHead: StreamHead | undefined): Promise<boolean> {
    const task = record as TaskRecord;
    if (this.request.woken === undefined) await this.answerCall(task, callHead);
    const stopped = () => this.abort.signal.aborted;
    // Its previous worker may be finishing it (a handoff): then it is not run again here.
    const head = await settledHead(this.lane, this.request.key, TASK_STREAM, stopped);
    // A wake is not a crash: however often a task slept, it is not refused for it.
    const { environment } = this.lane;
    const limits =
      this.request.woken === undefined ? environment : { maxExecutionsPerCall: Infinity };
    const verdict = decideRun(head, limits);
    if (verdict.kind === 'done') return false;
    // Input asked and answered before the takeover stays as the previous worker recorded it.
    this.state = taskSnapshotOf(head?.snapshot, task.id) ?? createdState(task);
    const again =
      head === undefined
        ? undefined
        : taskEventOf({
            kind: 'generation-start',
            attempt: head.generation.attempt + 1,
            atMs: Date.now(),
          });
    if (again !== undefined) this.apply(again);
    await this.begin(head);
    if (verdict.kind === 'refuse') {
      await this.finish(
        this.error(
          `the task was started ${verdict.attempt - 1} times without finishing (limit ${this.lane.environment.maxExecutionsPerCall}); it is not run again`,
        ),
      );
      return true;
    }
    // Woken: its journal is read now, so the replay holds its task slot for no read of the log.
    if (this.request.woken !== undefined) await this.run!.steps.preload();
    await this.taskSlot();
    await this.execute(task);
    return true;
  }

  /** The client cancelled the task, or its TTL passed: stop the tool, record the outcome. */
  stop(reason: StopReason): void {
    this.stopReason ??= reason;
    this.abort.abort(new Error(`the task was ${reason}`));
    this.waiting?.resolve(undefined);
  }

  /** This worker lost the task's partition: stop the tool, write nothing more (see StatelessExchange.abandon). */
  abandon(): void {
    this.abandoned = true;
    this.abort.abort(new Error('the partition was revoked'));
    this.waiting?.resolve(undefined);
  }

  /** Answers from `tasks/update`: keys not outstanding (unknown, answered, superseded) are ignored. */
  async answer(inputResponses: Readonly<Record<string, unknown>>): Promise<void> {
    const waiting = this.waiting;
    if (waiting === undefined || this.finished) return;
    const fresh = Object.keys(inputResponses).filter(
      (key) => waiting.keys.has(key) && !waiting.answers.has(key),
    );
    if (fresh.length === 0) return;
    for (const key of fresh) waiting.answers.set(key, inputResponses[key]);
    await this.run!.generation.record(
      { jsonrpc: '2.0', method: TASK_ANSWERED_METHOD, params: { keys: fresh } },
      this.apply({ kind: 'input-answered', atMs: Date.now(), keys: fresh }),
    );
    if (waiting.answers.size < waiting.keys.size || this.waiting !== waiting) return;
    this.waiting = undefined;
    waiting.resolve(
      Object.fromEntries(
        [...waiting.answers].map(([key, value]) => [waiting.keys.get(key)!, value]),
      ),
    );
  }

  /** Folds an event the task is about to record into its status; the status to record with it. */
  private apply(event: TaskEvent): TaskState | undefined {
    if (this.state !== undefined) this.state = foldTask(this.request.key, this.state, event).state;
    return this.state;
  }

  /**
   * Moves from the call slot that created the task to a task slot: the task is `working` while it
   * waits for one. Cancelled or abandoned meanwhile, it stops waiting (the slot, once granted, goes
   * back with the call).
   */
  private async taskSlot(): Promise<void> {
    const { signal } = this.abort;
    const moved = this.request.asTask?.();
    if (moved === undefined || signal.aborted) return;
    await Promise.race([
      moved,
      new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())),
    ]);
  }

  private async begin(previous: StreamHead | undefined): Promise<void> {
    const { key, subject, caller, claim } = this.request;
    this.run = await CallExecution.begin(
      this.lane.environment,
      { owner: key, stream: TASK_STREAM, subject, caller, idempotent: claim !== undefined },
      previous,
      // Only a lost partition stops it: a task cancelled before it ran here still records that.
      {
        stopped: () => this.abandoned,
        snapshot: this.state,
        progress: this.request.woken?.progress,
      },
    );
    this.run.reportStart();
  }

  /** Ends the `tools/call` stream with the CreateTaskResult (once: a takeover may find it done). */
  private async answerCall(record: TaskRecord, callHead: StreamHead | undefined): Promise<void> {
    if (callHead?.terminal !== undefined) return;
    if (this.abandoned) throw notOwned(this.callStream);
    const { key, message } = this.request;
    const { writer } = this.lane.stores;
    const created = createdState(record);
    const generation = await writer.begin(key, this.callStream, { previous: callHead });
    await generation.finish({ jsonrpc: '2.0', id: message.id, result: createTaskResult(created) });
  }

  /** The tool's rounds: each `inputRequired` answer asks the client, then the tool runs again. */
  private async execute(record: TaskRecord): Promise<void> {
    const { ttlMs } = record.task;
    const expiry =
      ttlMs === null
        ? undefined
        : setTimeout(
            () => this.stop('expired'),
            Math.max(0, record.createdAtMs + ttlMs - Date.now()),
          );
    expiry?.unref();
    try {
      let message = this.request.message;
      for (let round = 1; !this.abort.signal.aborted; round++) {
        const answer = await this.invoke(message);
        if (answer === undefined || this.abort.signal.aborted) break;
        const asked = inputRequiredOf(answer);
        if (asked === undefined) return await this.finish(answer);
        const responses = await this.ask(asked.inputRequests, round);
        if (responses === undefined) break;
        message = nextRound(message, responses, asked.requestState);
      }
      await this.finish(this.stopped());
    } catch (error) {
      // Asleep off memory: not an end — the lane keeps the request and runs it again on time.
      if (error instanceof Asleep) throw error;
      // The server could not run it (a module's `register` threw): the task fails, reported.
      await this.finish(this.error('the server could not run this task'));
      throw error;
    } finally {
      clearTimeout(expiry);
    }
  }

  /** One round of the tool, run again while it sleeps (`ex.sleep`), the task slot given back. */
  private async invoke(message: JSONRPCRequest): Promise<JSONRPCMessage | undefined> {
    const run = this.run!;
    const answer = await run.untilAnswered(
      () =>
        invokeStateless(
          this.lane.environment,
          run,
          { classification: this.request.classification, tasks: true },
          message,
          this.abort.signal,
          async (sent) => {
            if (!this.finished) await run.send(sent);
          },
        ),
      this.request.idle,
      this.abort.signal,
      // A keyed task (idempotency key) rests in memory: its key's later requests join it here.
      this.request.claim === undefined,
    );
    return answer ?? undefined;
  }

  /** Records what the tool asks, keyed uniquely over the task's life, and waits for the answers. */
  private async ask(
    inputRequests: Record<string, unknown>,
    round: number,
  ): Promise<Record<string, unknown> | undefined> {
    const run = this.run!;
    const prefix = `${run.attempt}.${round}.`;
    const keys = new Map(Object.keys(inputRequests).map((key) => [`${prefix}${key}`, key]));
    const answered = new Promise<Record<string, unknown> | undefined>((resolve) => {
      this.waiting = { keys, answers: new Map(), resolve };
    });
    const asked = Object.fromEntries(
      Object.entries(inputRequests).map(([key, request]) => [`${prefix}${key}`, request]),
    );
    await run.generation.record(
      { jsonrpc: '2.0', method: TASK_INPUT_METHOD, params: { inputRequests: asked } },
      this.apply({ kind: 'input-required', atMs: Date.now(), inputRequests: asked }),
    );
    if (this.abort.signal.aborted) return undefined;
    // A task may wait for its user for hours: it gives its call slot back meanwhile.
    const { idle } = this.request;
    return idle === undefined ? answered : idle(answered);
  }

  /** The terminal record of a task stopped before its tool answered. */
  private stopped(): unknown {
    if (this.stopReason === 'cancelled')
      return {
        jsonrpc: '2.0',
        method: TASK_CANCELLED_METHOD,
        params: { statusMessage: 'The task was cancelled (tasks/cancel).' },
      };
    if (this.stopReason === 'expired')
      return this.error('the task expired: its ttlMs passed before it finished');
    return this.error('the tool ended without an answer');
  }

  private error(message: string): JSONRPCMessage {
    return {
      jsonrpc: '2.0',
      id: this.request.message.id,
      error: { code: JsonRpcErrorCodes.internalError, message: `Internal error: ${message}` },
    };
  }

  private async finish(outcome: unknown): Promise<void> {
    if (this.finished || this.abandoned) return;
    this.finished = true;
    this.waiting = undefined;
    const run = this.run!;
    const ended = taskEventOf({
      kind: 'terminal',
      attempt: run.attempt,
      payload: outcome,
      atMs: Date.now(),
    });
    const before = this.state;
    // An outcome too large for the head (`before` is kept there) is read from the log instead.
    await run.generation.finish(outcome, ended ? this.apply(ended) : before, before);
  }
}

/** A task's status the moment it was created. */
function createdState(record: TaskRecord): TaskState {
  return createdTask(record.id, { atMs: record.createdAtMs, ...record.task });
}
