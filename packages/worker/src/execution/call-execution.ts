import type { AuthInfo } from '@modelcontextprotocol/server';
import type { GenerationWriter } from '@tidemark/log';
import {
  ErrorCodes,
  formatGeneration,
  progressOf,
  TidemarkError,
  type GenerationCause,
  type PartitionKey,
  type RequestId,
  type StreamHead,
  type StreamId,
} from '@tidemark/protocol';
import type { Execution } from '@tidemark/tools';
import { backoff, whileUnavailable } from './backoff.js';
import type { BeginOptions, CallEnvironment } from './call-environment.js';
import type { CallOwner } from './call-owner.js';
import { continueProgress } from './progress-continuity.js';
import { restKey } from './signal-desk.js';
import { Asleep } from './sleep.js';
import { stepFetch } from './step-fetch.js';
import { authInfoOf } from './tool-server.js';
import { withCompensations } from './compensations.js';
import { toolCallOf, writeAudit, type CallEnd } from './call-audit.js';
import type { RetryHost } from './retries.js';
import { journaledSteps } from './journaled-steps.js';
import type { CallSteps } from './steps.js';

/** Gives the call's slot back while `waiting` is pending, and takes one again after. */
export type RestFunction = <T>(waiting: Promise<T>) => Promise<T>;

/** Messages of one call written ahead of the log before its tool waits (see `pipeline`). */
const MAX_UNACKNOWLEDGED = 256;

/**
 * A call running on this worker, the same on every lane (a session's call, a stateless call, a
 * task): the generations of its stream — its first (or a takeover after a worker died) started
 * while the log is waited out, each retry the next generation, every one reported as it starts —
 * its durable steps, the `Execution` its tool sees, and its final message, written until it is in.
 */
export class CallExecution {
  /** What this generation's progress values are continued from. */
  private progressBase = 0;
  /** The highest progress written so far, in any generation of this run. */
  private lastProgress = 0;
  /** When the tool went to sleep (`ex.sleep`) in its latest invocation: its wake time. */
  private wakeAtMs: number | undefined;

  private constructor(
    private readonly environment: CallEnvironment,
    private readonly call: CallOwner,
    /** The generation being written now. */
    private current: GenerationWriter,
    private cause: GenerationCause,
    /** The call's durable steps, journaled in the log. */
    readonly steps: CallSteps,
    /** This worker stopped serving the call's partition. */
    readonly stopped: () => boolean,
    /** The stream whose journal holds the call's steps (and its signals' answers). */
    private readonly journal: StreamId,
  ) {}

  /**
   * Starts the stream's next generation after `previous` (none: its first; else a takeover). A log
   * that refuses for a while is waited out with backoff, up to a minute, unless `stopped`.
   */
  static async begin(
    environment: CallEnvironment,
    call: CallOwner,
    previous: StreamHead | undefined,
    options: BeginOptions,
  ): Promise<CallExecution> {
    const { owner, stream } = call;
    const { stopped, snapshot } = options;
    const cause: GenerationCause = previous === undefined ? 'first' : 'takeover';
    const { lastProgress, onWriteFailure } = environment;
    // The generations before continued each other's numbering; the one before this may have died
    // before writing any progress, so its head's base counts too.
    const known = options.progress;
    const progressBase =
      previous === undefined || (lastProgress === undefined && known === undefined)
        ? undefined
        : async (startOffset: bigint) =>
            Math.max(
              previous.progressBase ?? 0,
              known ?? (await lastProgress!(owner, previous, startOffset)),
            );
    const onRetry = (error: unknown) => onWriteFailure?.(owner, stream, error);
    const generation = await whileUnavailable(
      () => {
        // A worker whose partition was revoked while it got here must not start anything: the
        // next owner may already run the stream, and a generation begun now would supersede the
        // owner's — then die with this worker, leaving a stream nobody finishes.
        if (stopped()) throw notOwned(stream);
        return environment.writer.begin(owner, stream, {
          previous,
          cause,
          ...(progressBase === undefined ? {} : { progressBase }),
          ...(snapshot === undefined ? {} : { snapshot }),
        });
      },
      { stopped, onRetry },
    );
    const journal = options.journal ?? stream;
    const steps = journaledSteps(environment.steps, owner, journal, generation.generation.attempt, {
      maxStepBytes: environment.maxStepBytes,
      onStep: environment.onStep,
      replay: options.replay,
      onRetry,
      fenced: environment.fenced === undefined ? undefined : () => environment.fenced!(owner),
      stopped,
    });
    const execution = new CallExecution(
      environment,
      call,
      generation,
      cause,
      steps,
      stopped,
      journal,
    );
    execution.lastProgress = generation.currentHead.progressBase ?? 0;
    execution.progressBase = execution.lastProgress;
    return execution;
  }

  /** The key the call's stream is under (its session, routing key or task id). */
  get owner(): PartitionKey {
    return this.call.owner;
  }

  get stream(): StreamId {
    return this.call.stream;
  }

  get subject(): string | undefined {
    return this.call.subject;
  }

  /** Who the call runs for, as the SDK hands it to handlers (`ctx.http.authInfo`). */
  get authInfo(): AuthInfo | undefined {
    return authInfoOf(this.call.subject, this.call.caller);
  }

  /** The generation being written now (a retry starts the next). */
  get generation(): GenerationWriter {
    return this.current;
  }

  get attempt(): number {
    return this.current.generation.attempt;
  }

  /**
   * Writes one message of the current generation; resolves once durable. Progress continues the
   * numbering of the generations before (see progress-continuity.ts).
   */
  send(message: unknown): Promise<bigint> {
    const continued = continueProgress(message, this.progressBase);
    this.lastProgress = Math.max(this.lastProgress, progressOf(continued) ?? 0);
    return this.current.send(continued);
  }

  /**
   * Writes a message a tool sends, pipelined: the tool goes on while it is written (the final
   * response is queued behind it, and a failed write poisons the generation, so nothing lands
   * after a hole). Past MAX_UNACKNOWLEDGED messages in flight the tool waits for the log: memory
   * stays bounded.
   */
  async pipeline(message: unknown): Promise<void> {
    const written = this.send(message);
    if (this.current.unacknowledged > MAX_UNACKNOWLEDGED) await written;
    else written.catch(() => undefined);
  }

  /** Reports the execution the current generation starts. */
  reportStart(): void {
    const { owner, stream } = this.call;
    this.environment.onExecution?.({
      session: owner,
      stream,
      attempt: this.attempt,
      cause: this.cause,
    });
  }

  /** Runs the call again: the next generation (cause `retry`), reported. */
  async retry(): Promise<void> {
    const progressBase = this.lastProgress;
    this.current = await this.environment.writer.begin(this.call.owner, this.call.stream, {
      previous: this.current.currentHead,
      cause: 'retry',
      progressBase: () => Promise.resolve(progressBase),
    });
    this.progressBase = this.lastProgress;
    this.cause = 'retry';
    this.reportStart();
  }

  /** The `Execution` the call's tool runs in now (`currentExecution()`): this generation's. */
  toolExecution(): Execution {
    const { owner, stream, subject, caller } = this.call;
    const generation = this.current.generation;
    return withCompensations({
      sessionId: owner,
      stream,
      generation,
      attempt: generation.attempt,
      ...(subject === undefined ? {} : { subject }),
      ...(caller?.clientId === undefined ? {} : { clientId: caller.clientId }),
      ...(caller?.scopes === undefined ? {} : { scopes: caller.scopes }),
      ...this.steps.forExecution(
        formatGeneration(generation),
        (wakeAtMs) => {
          this.wakeAtMs = wakeAtMs;
        },
        this.environment.signals.host(owner, this.journal),
      ),
      fetch: stepFetch,
    });
  }

  /**
   * The wake time of the sleep the tool went into in its invocation just ended (once: it is
   * cleared), or undefined when it did not sleep: then what the invocation answered is the call's.
   */
  takeWake(): number | undefined {
    const wakeAtMs = this.wakeAtMs;
    this.wakeAtMs = undefined;
    return wakeAtMs;
  }

  /**
   * Invokes the tool (`invoke`) until it answers without going to sleep: while it sleeps the call
   * rests (`rest`: its slot given back meanwhile) until its wake time, then runs again in the same
   * generation, its steps replayed. Undefined when `signal` aborted during a sleep (cancelled, or
   * the partition moved: its next owner wakes it from the journal). With `leave`, a sleep of
   * `sleepInMemoryMs` or more is not waited here: `Asleep` is thrown, for the lane to keep the
   * call off memory until then.
   */
  async untilAnswered<T>(
    invoke: () => Promise<T>,
    rest: RestFunction | undefined,
    signal: AbortSignal,
    leave = false,
  ): Promise<T | undefined> {
    for (;;) {
      const answer = await invoke();
      const wakeAtMs = this.takeWake();
      if (wakeAtMs === undefined) return answer;
      if (leave && wakeAtMs - Date.now() >= this.environment.sleepInMemoryMs)
        throw new Asleep(wakeAtMs, this.lastProgress, this.restKey);
      const waking = this.untilWoken(wakeAtMs, signal);
      if (!(await (rest === undefined ? waking : rest(waking)))) return undefined;
      // Its progress goes on from where it got, as a retry's does: the replay reports again.
      this.progressBase = this.lastProgress;
    }
  }

  /** What the call rests under: its signals' answers wake it (`SignalDesk`). */
  get restKey(): string {
    return restKey(this.call.owner, this.journal);
  }

  /**
   * Waits until `wakeAtMs` — or until one of the call's signals is answered, sooner; false when
   * `signal` aborted first.
   */
  untilWoken(wakeAtMs: number, signal: AbortSignal): Promise<boolean> {
    return this.environment.signals.until(this.restKey, wakeAtMs, signal);
  }

  /** What the retry wrapper drives for a server that runs this call alone (a stateless request). */
  toolHost(): RetryHost {
    const { events, logger, onExecutionEnd } = this.environment;
    return {
      execution: () => this.toolExecution(),
      retry: () => this.retry(),
      stopped: () => this.stopped(),
      onExecutionEnd: (end) => onExecutionEnd?.(end),
      audit: (_, end) => this.audit(end),
      logger,
      emitAs: events?.emitAs,
    };
  }

  /** Answers a request refused before its tool ran: a call's audit record says why, then the error. */
  async refuse(message: { id: RequestId; method: string }, error: unknown): Promise<void> {
    if (message.method === 'tools/call')
      await this.audit({ ...toolCallOf(message), outcome: 'refused', reason: error });
    await this.current.finish({ jsonrpc: '2.0', id: message.id, error });
  }

  /** Writes the call's audit record, before its answer (`writeAudit`). */
  audit(end: CallEnd): Promise<void> {
    return writeAudit(this.environment, this.call, end, this.attempt, this.stopped);
  }

  /**
   * Ends the stream with its final message (none: a bare terminal record). A write the log
   * refused does not leave the call hanging until its partition moves: the final message is
   * written again, as a new generation when the refused one was poisoned (the client is reset,
   * then gets the result), with backoff while the log stays unavailable. False when `stopped`
   * first: the partition's next owner runs the call again.
   */
  async finish(message: unknown, stopped: () => boolean): Promise<boolean> {
    const { owner, stream } = this.call;
    for (let failures = 0; ; failures++) {
      try {
        await this.current.finish(message);
        return true;
      } catch (error) {
        if (stopped()) return false;
        this.environment.onWriteFailure?.(owner, stream, error);
        await backoff(failures);
        if (stopped()) return false;
        if (!this.current.poisoned) continue; // the terminal record is in; its head is retried
        try {
          await this.retry();
        } catch {
          // Still unavailable: the next round waits longer.
        }
      }
    }
  }
}

/** Why a stream was not started: this worker stopped serving its partition. */
export function notOwned(stream: StreamId): TidemarkError {
  return new TidemarkError(
    ErrorCodes.closed,
    `${stream} not started: this worker no longer serves its partition`,
  );
}
