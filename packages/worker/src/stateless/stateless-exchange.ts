import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { IdempotencyClaim } from '@tidemark/log';
import {
  declaresTasks,
  missingTasksCapability,
  requestStreamId,
  STATELESS_PROTOCOL_VERSION,
  taskDecision,
  type StreamHead,
  type StreamId,
} from '@tidemark/protocol';
import { whileUnavailable } from '../execution/index.js';
import type { StatelessExchangeOptions } from '../calls/index.js';
import { invokeStateless } from '../execution/index.js';
import { journaledSteps } from '../execution/index.js';
import { decideRun } from '../execution/index.js';
import { StreamRun } from '../execution/index.js';
import { TaskExecution } from '../tasks/index.js';
import { taskSupportOf } from '@tidemark/tools';
import { INTERNAL_ERROR } from '../calls/index.js';

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
  private markAnswered!: () => void;
  readonly stream: StreamId;
  /**
   * Resolves once the request's own stream has its final message (a task's: the task), or the
   * exchange ended without one: what later requests with its idempotency key wait for.
   */
  readonly answered = new Promise<void>((resolve) => (this.markAnswered = resolve));

  constructor(private readonly options: StatelessExchangeOptions) {
    this.stream = requestStreamId(options.message.id);
  }

  /** The idempotency key's claim this exchange runs under, if the call carried a key. */
  get claim(): IdempotencyClaim | undefined {
    return this.options.claim;
  }

  /** The client closed its response stream (or cancelled its task): the call is cancelled. */
  cancel(): void {
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
    this.task = new TaskExecution(this.options, this.stream);
    if (this.abandonedHere) this.task.abandon();
    return this.task;
  }

  /** A client's `tasks/update` for this request's task. */
  answer(inputResponses: Readonly<Record<string, unknown>>): Promise<void> {
    return this.task?.answer(inputResponses) ?? Promise.resolve();
  }

  /**
   * The request's stream head as the log decides it — once the worker its partition came from
   * finished the call or gave it up (a handoff), when that worker's generation is unfinished.
   */
  private async settledHead(): Promise<StreamHead | undefined> {
    const { key, heads, handoffs } = this.options;
    const decided = await heads.decided(key, this.stream);
    const stopped = () => this.abort.signal.aborted;
    return handoffs === undefined ? decided : handoffs.settle(key, this.stream, decided, stopped);
  }

  /** Runs the exchange to its terminal record; false when it had already finished. */
  async run(): Promise<boolean> {
    try {
      return await this.runToEnd();
    } finally {
      this.markAnswered();
    }
  }

  private async runToEnd(): Promise<boolean> {
    const { key, message, sessions, mode, modules } = this.options;
    const head = await this.settledHead();
    const tasks = mode !== 'never';
    if (tasks) {
      // A task already created under this key (its worker stopped): run it on, never twice.
      const read = this.options.claim?.record;
      const existing = read === undefined ? await sessions.get(key) : (read ?? undefined);
      if (existing?.task !== undefined) return this.taskExecution().resume(existing, head);
    }
    const verdict = decideRun(head, this.options);
    if (verdict.kind === 'done') return false;
    const tool = (message.params as { name?: unknown } | undefined)?.name;
    const decision =
      message.method === 'tools/call' && typeof tool === 'string'
        ? taskDecision(mode, taskSupportOf(modules, tool), declaresTasks(message.params))
        : 'direct';
    if (decision === 'task') return this.taskExecution().create(head, () => this.markAnswered());
    const { claim } = this.options;
    // The key's claim is written while the call runs, and is in the log before its answer: the
    // requests after it are decided here, from memory, until then.
    const claimed = claim === undefined ? Promise.resolve() : this.writeClaim(claim);
    claimed.catch(() => undefined);
    const run = await StreamRun.begin(
      this.options,
      key,
      this.stream,
      head,
      () => this.abort.signal.aborted,
    );
    if (verdict.kind === 'refuse') {
      await claimed;
      await run.generation.finish({ jsonrpc: '2.0', id: message.id, error: verdict.error });
      return true;
    }
    run.reportStart();
    if (decision === 'refuse') {
      await claimed;
      await run.generation.finish({
        jsonrpc: '2.0',
        id: message.id,
        error: missingTasksCapability(),
      });
      return true;
    }
    let answer: JSONRPCMessage | undefined;
    try {
      answer = await invokeStateless(
        { ...this.options, tasks },
        message,
        run,
        journaledSteps(this.options.steps, key, claim?.journal ?? this.stream, run.attempt, {
          ...this.options,
          // A keyed call run again in a later request's stream replays the first one's steps.
          replay: claim !== undefined && claim.journal !== this.stream,
        }),
        this.abort.signal,
        async (sent) => void (await run.send(sent)),
      );
    } catch (error) {
      // The server could not run it (a module's `register` threw): still answered, then reported.
      answer = { jsonrpc: '2.0', id: message.id, error: INTERNAL_ERROR };
      throw error;
    } finally {
      if (!this.abandonedHere) {
        await claimed;
        await run.generation.finish(answer);
      }
    }
    return !this.abandonedHere;
  }

  /** Claims the idempotency key: a record under the key, beside the call it names. */
  private writeClaim({ fingerprint, stream, journal }: IdempotencyClaim): Promise<void> {
    const { key, subject, sessions } = this.options;
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
