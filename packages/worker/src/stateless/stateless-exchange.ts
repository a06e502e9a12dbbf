import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { IdempotencyClaim } from '@tidemark/log';
import {
  declaresTasks,
  missingTasksCapability,
  requestStreamId,
  STATELESS_PROTOCOL_VERSION,
  taskDecision,
  type StreamId,
} from '@tidemark/protocol';
import { taskSupportOf, type ToolModule } from '@tidemark/tools';
import {
  INTERNAL_ERROR,
  settledHead,
  type LaneContext,
  type StatelessRequest,
} from '../calls/index.js';
import { CallExecution, decideRun, invokeStateless, whileUnavailable } from '../execution/index.js';
import { TaskExecution } from '../tasks/index.js';

/**
 * One request of the stateless lane (2026-07-28), with what it answers written to `events` like
 * any stream: stamped, a generation per execution, ending with a terminal record. A `tools/call`
 * the server makes a task (Tasks extension) is answered at once with the task, then runs on in
 * the task's own stream.
 */
export class StatelessExchange {
  private readonly abort = new AbortController();
  private task: TaskExecution | undefined;
  private abandonedHere = false;
  /** Cancelled before its task was run here (a task woken to be cancelled): it stops at once. */
  private cancelled = false;
  private markAnswered!: () => void;
  readonly stream: StreamId;
  /**
   * Resolves once the request's own stream has its final message (a task's: the task), or the
   * exchange ended without one: what later requests with its idempotency key wait for.
   */
  readonly answered = new Promise<void>((resolve) => (this.markAnswered = resolve));

  constructor(
    private readonly lane: LaneContext,
    private readonly request: StatelessRequest,
  ) {
    this.stream = requestStreamId(request.message.id);
  }

  /** The idempotency key's claim this exchange runs under, if the call carried a key. */
  get claim(): IdempotencyClaim | undefined {
    return this.request.claim;
  }

  /** The client closed its response stream (or cancelled its task): the call is cancelled. */
  cancel(): void {
    this.cancelled = true;
    if (this.task !== undefined) this.task.stop('cancelled');
    else this.abort.abort(new Error('the client closed the response stream'));
  }

  /**
   * This worker no longer serves the request's partition: the tool is stopped and nothing more is
   * written (no answer, no terminal record) — the partition's next owner runs the request again.
   */
  abandon(): void {
    this.abandonedHere = true;
    if (this.task !== undefined) this.task.abandon();
    else this.abort.abort(new Error('the partition was revoked'));
  }

  get abandoned(): boolean {
    return this.abandonedHere;
  }

  private taskExecution(): TaskExecution {
    this.task = new TaskExecution(this.lane, this.request, this.stream);
    if (this.abandonedHere) this.task.abandon();
    else if (this.cancelled) this.task.stop('cancelled');
    return this.task;
  }

  /** A client's `tasks/update` for this request's task. */
  answer(inputResponses: Readonly<Record<string, unknown>>): Promise<void> {
    return this.task?.answer(inputResponses) ?? Promise.resolve();
  }

  /** Runs the exchange to its terminal record; false when it had already finished. */
  async run(): Promise<boolean> {
    try {
      return await this.runToEnd();
    } finally {
      this.markAnswered();
    }
  }

  /**
   * A task woken from its sleep runs on. Its call was answered (with the task) before it first
   * ran: that stream is not read again. Its task gone (expired meanwhile): nothing runs.
   */
  private async wake(): Promise<boolean> {
    const existing = await this.lane.stores.sessions.get(this.request.key);
    return existing?.task === undefined ? false : this.taskExecution().resume(existing, undefined);
  }

  private async runToEnd(): Promise<boolean> {
    const { key, message, mode, claim, subject, caller } = this.request;
    const { environment } = this.lane;
    const stopped = () => this.abort.signal.aborted;
    if (this.request.woken !== undefined) return this.wake();
    const head = await settledHead(this.lane, key, this.stream, stopped);
    const tasks = mode !== 'never';
    if (tasks) {
      // A task already created under this key (its worker stopped): run it on, never twice.
      const read = claim?.record;
      const existing = read === undefined ? await this.lane.stores.sessions.get(key) : read;
      if (existing?.task !== undefined) return this.taskExecution().resume(existing, head);
    }
    const verdict = decideRun(head, environment);
    if (verdict.kind === 'done') return false;
    const decision = taskDecisionOf(message, mode, environment.modules);
    if (decision === 'task') return this.taskExecution().create(head, () => this.markAnswered());
    // The key's claim is written while the call runs, and is in the log before its answer: the
    // requests after it are decided here, from memory, until then.
    const claimed = claim === undefined ? Promise.resolve() : this.writeClaim(claim);
    claimed.catch(() => undefined);
    const execution = await CallExecution.begin(
      environment,
      { owner: key, stream: this.stream, subject, caller, idempotent: claim !== undefined },
      head,
      {
        stopped,
        // A keyed call run again in a later request's stream replays the first one's steps.
        journal: claim?.journal,
        replay: claim !== undefined && claim.journal !== this.stream,
      },
    );
    const refusal =
      verdict.kind === 'refuse'
        ? verdict.error
        : decision === 'refuse'
          ? missingTasksCapability()
          : undefined;
    if (verdict.kind !== 'refuse') execution.reportStart();
    if (refusal !== undefined) {
      await claimed;
      await this.finish(execution, { jsonrpc: '2.0', id: message.id, error: refusal });
      return true;
    }
    let answer: JSONRPCMessage | undefined;
    try {
      answer = await execution.untilAnswered(
        () =>
          invokeStateless(
            environment,
            execution,
            { classification: this.request.classification, tasks },
            message,
            this.abort.signal,
            async (sent) => void (await execution.send(sent)),
          ),
        this.request.idle,
        this.abort.signal,
      );
    } catch (error) {
      // The server could not run it (a module's `register` threw): still answered, then reported.
      answer = { jsonrpc: '2.0', id: message.id, error: INTERNAL_ERROR };
      throw error;
    } finally {
      if (!this.abandonedHere) {
        await claimed;
        await this.finish(execution, answer);
      }
    }
    return !this.abandonedHere;
  }

  /** Ends the request's stream, written again while the log refuses — unless abandoned meanwhile. */
  private finish(execution: CallExecution, answer: unknown): Promise<boolean> {
    return execution.finish(answer, () => this.abandonedHere);
  }

  /** Claims the idempotency key: a record under the key, beside the call it names. */
  private writeClaim({ fingerprint, stream, journal }: IdempotencyClaim): Promise<void> {
    const { key, subject } = this.request;
    const { sessions } = this.lane.stores;
    const record = {
      id: key,
      protocolVersion: STATELESS_PROTOCOL_VERSION,
      initialize: null,
      ...(subject === undefined ? {} : { subject }),
      createdAtMs: Date.now(),
      idempotency: { fingerprint, stream, journal },
    };
    return whileUnavailable(() => sessions.create(record), {
      stopped: () => this.abandonedHere,
      onRetry: () => undefined,
    });
  }
}

/** Whether a request runs as a task, directly, or is refused (a task the client cannot take). */
function taskDecisionOf(
  message: StatelessRequest['message'],
  mode: StatelessRequest['mode'],
  modules: readonly ToolModule[],
): ReturnType<typeof taskDecision> {
  const tool = (message.params as { name?: unknown } | undefined)?.name;
  return message.method === 'tools/call' && typeof tool === 'string'
    ? taskDecision(mode, taskSupportOf(modules, tool), declaresTasks(message.params))
    : 'direct';
}
