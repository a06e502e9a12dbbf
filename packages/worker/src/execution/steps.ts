import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  isStepOutcome,
  type JournaledStep,
  type StepOutcome,
  type StepRecord,
} from '@tidemark/log';
import { ErrorCodes, invalidOption, RESERVED_STEP_PREFIX, TidemarkError } from '@tidemark/protocol';
import { whileUnavailable } from './backoff.js';
import { durableSignal, NO_SIGNALS, type SignalHost } from './signal.js';
import { durableSleep } from './sleep.js';
import { JournalOrder, type JournalListing } from './step-order.js';
import { asJson, errorRecord, replayed } from './step-values.js';
import { compileStepRetry, stepRetryDelay, type CompiledStepRetry } from '@tidemark/tools/runtime';
import {
  currentExecution,
  isRetryableError,
  type Execution,
  type StepContext,
  type StepReport,
  type StepFunction,
} from '@tidemark/tools';

/** Where a call's steps are journaled: the log (`StepJournal`) in a worker, memory in `runTool`. */
interface StepStore {
  get(step: string): Promise<StepRecord | undefined>;
  put(step: string, value: StepRecord): Promise<void>;
  /** Every step of the call journaled so far (what a replay checks its order against). */
  list?: JournalListing;
}

export interface CallStepsOptions {
  store: StepStore;
  /** The call, the same in every execution of it (session/key and stream): effect keys derive from it. */
  callId: string;
  /**
   * Whether an earlier execution in another process may have journaled steps (the call's first
   * generation here is not its first): then a step not known here is looked up in the journal.
   */
  replay: boolean;
  maxStepBytes: number;
  onStep?: ((step: StepReport) => void) | undefined;
  /** A refused journal write that will be retried. */
  onRetry?: ((error: unknown) => void) | undefined;
  /** How a step waits between two tries (tests pass a clock of their own). */
  sleep?: ((ms: number, signal: AbortSignal | undefined) => Promise<void>) | undefined;
  /** No step may start here now: another process may be running the call (`CallEnvironment.fenced`). */
  fenced?: (() => boolean) | undefined;
  /** This process stopped running the call: a fenced step gives up. */
  stopped?: (() => boolean) | undefined;
}

const runningStep = new AsyncLocalStorage<StepContext>();

/** The step whose function runs now (what `Execution.fetch` takes its effect key from). */
export function currentStep(): StepContext | undefined {
  return runningStep.getStore();
}

/** Longest step name, in characters. */
const MAX_STEP_NAME = 200;
/**
 * Most durable steps one execution takes: each is a record in `streams` and an entry in memory for
 * the call's life, so a loop around `step` must end somewhere (security review L10).
 */
const MAX_STEPS_PER_EXECUTION = 10_000;
/** How often a fenced step looks whether its call was stopped (`CallStepsOptions.fenced`). */
const FENCE_POLL_MS = 100;

/**
 * The durable steps of one call in this process: the outcomes known here (journaled or replayed)
 * and, for each execution, a `step` function that counts its names — the n-th `step('charge')` of
 * every execution is the same step.
 */
export class CallSteps {
  private readonly known = new Map<string, StepRecord>();
  private readonly sleep: (ms: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Where earlier executions (in other processes) took their steps. */
  private order: JournalOrder;
  /** The whole journal is in `known` (`preload`): a step not there was never journaled. */
  private loaded = false;

  constructor(private readonly options: CallStepsOptions) {
    this.sleep = options.sleep ?? waitOrAbort;
    this.order = new JournalOrder(options.replay ? options.store.list : undefined);
  }

  /**
   * The `step`, `patched`, `sleep` and `signal` of one execution (generation `epoch.attempt`);
   * `suspend` (given where the lane can run the tool again later) takes a long sleep's wake time,
   * or a signal's wait's; `signals` is where signals are minted and answered.
   */
  forExecution(
    generation: string,
    suspend?: (wakeAtMs: number) => void,
    signals: SignalHost = NO_SIGNALS,
  ): Pick<Execution, 'step' | 'patched' | 'sleep' | 'signal'> {
    const seen = new Map<string, number>();
    let taken = 0;
    const patched = async (id: string): Promise<boolean> => {
      if (typeof id !== 'string' || id.length === 0 || id.length > MAX_STEP_NAME)
        throw invalidOption('patch id', `a string of 1..${MAX_STEP_NAME} characters`, id);
      // A marker, not a step: it takes no place among the steps, so old and new code's line up.
      const marker = `patch ${id}`;
      if ((await this.lookup(marker)) !== undefined) return true;
      if (this.options.replay && (await this.order.ranPast(taken))) return false;
      const version = currentExecution()?.moduleVersion;
      await this.journal(marker, {
        outcome: { ok: true },
        generation,
        atMs: Date.now(),
        durationMs: 0,
        ...(version === undefined ? {} : { version }),
      });
      return true;
    };
    const step: StepFunction = (name, fn, options) => {
      if (
        typeof name !== 'string' ||
        name.length === 0 ||
        name.length > MAX_STEP_NAME ||
        name.startsWith(RESERVED_STEP_PREFIX)
      )
        return Promise.reject(
          invalidOption(
            'step name',
            `a string of 1..${MAX_STEP_NAME} characters, not starting with '${RESERVED_STEP_PREFIX}' (the runtime's)`,
            name,
          ),
        );
      if (taken >= MAX_STEPS_PER_EXECUTION)
        return Promise.reject(
          invalidOption(
            'step',
            `at most ${MAX_STEPS_PER_EXECUTION} durable steps in one call (batch the work inside fewer steps)`,
            name,
          ),
        );
      let policy: CompiledStepRetry;
      try {
        policy = compileStepRetry(options?.retry);
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new TypeError(String(error)));
      }
      taken++;
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      const place = { generation, index: taken };
      return this.run(count === 1 ? name : `${name}#${count}`, place, fn, policy);
    };
    const inStep = () => currentStep() !== undefined;
    return {
      step,
      patched,
      sleep: durableSleep(step, this.sleep, suspend, inStep),
      signal: durableSignal(step, signals, suspend, inStep),
    };
  }

  /**
   * Reads the call's whole journal at once, ahead of a replay (a task woken from a sleep, before it
   * takes a slot): the replay then reads nothing more of the log.
   */
  async preload(): Promise<void> {
    const { replay, store } = this.options;
    if (!replay || store.list === undefined || this.loaded) return;
    const journal = await store.list();
    for (const { step, ...record } of journal) this.known.set(step, record);
    this.order = new JournalOrder(() => Promise.resolve(journal));
    this.loaded = true;
  }

  /** A step's record: known here, else — when an earlier execution may have journaled it — read. */
  private async lookup(step: string): Promise<StepRecord | undefined> {
    const known = this.known.get(step);
    // A sleep's wake time may have been brought forward (an operator's `tidemark calls wake`).
    if (known !== undefined && step.startsWith('sleep '))
      return (await this.options.store.get(step)) ?? known;
    if (known !== undefined || !this.options.replay || this.loaded) return known;
    return this.options.store.get(step);
  }

  private async run<T>(
    step: string,
    { generation, index }: { generation: string; index: number },
    fn: (step: StepContext) => T | Promise<T>,
    policy: CompiledStepRetry,
  ): Promise<T> {
    const { onStep } = this.options;
    const journaled = await this.lookup(step);
    const version = currentExecution()?.moduleVersion;
    // Code that takes other steps, or in another order, than the journal's: stop, said.
    await this.order.check(step, index, journaled, version);
    const placed = { index, ...(version === undefined ? {} : { version }) };
    if (journaled !== undefined && isStepOutcome(journaled)) {
      this.known.set(step, journaled);
      const attempts = journaled.attempts ?? 1;
      report(onStep, { step, replayed: true, ok: journaled.outcome.ok, attempts });
      return replayed<T>(journaled.outcome);
    }
    // Tried before and waiting for its next try (here, or on a worker that died): count on.
    let attempt = journaled === undefined ? 1 : journaled.retrying.attempts + 1;
    let waitMs =
      journaled === undefined ? 0 : Math.max(0, journaled.retrying.nextAtMs - Date.now());
    const effectKey = effectKeyOf(this.options.callId, step);
    const started = performance.now();
    for (;;) {
      // A call cancelled (or moved) while its step waits is not tried again here: the wait ends
      // with the signal's error, and the journal keeps the count for whoever goes on.
      if (waitMs > 0) await this.sleep(waitMs, currentExecution()?.abortSignal);
      await this.whileFenced(step);
      let outcome: StepOutcome;
      let thrown: { error: unknown } | undefined;
      try {
        const context = { step, effectKey, attempt };
        const value = await runningStep.run(context, () => fn(context));
        outcome = value === undefined ? { ok: true } : { ok: true, value: asJson(step, value) };
      } catch (error) {
        // A retryable failure of the call is not an outcome: the call's retry runs the step again.
        if (isRetryableError(error) || isNotJournaled(error)) throw error;
        const delayMs = stepRetryDelay(policy, attempt, error);
        if (delayMs !== undefined) {
          waitMs = delayMs;
          const nextAtMs = Date.now() + delayMs;
          const retrying = { attempts: attempt, nextAtMs, error: errorRecord(error) };
          await this.journal(step, { retrying, generation, atMs: Date.now(), ...placed });
          report(onStep, {
            step,
            replayed: false,
            ok: false,
            attempts: attempt,
            retryInMs: delayMs,
          });
          attempt++;
          continue;
        }
        thrown = { error };
        outcome = { ok: false, error: errorRecord(error) };
      }
      const record: JournaledStep = {
        outcome,
        generation,
        atMs: Date.now(),
        durationMs: performance.now() - started,
        ...(attempt > 1 ? { attempts: attempt } : {}),
        ...placed,
      };
      await this.journal(step, record);
      report(onStep, { step, replayed: false, ok: outcome.ok, attempts: attempt });
      if (thrown !== undefined) throw thrown.error;
      // The value as a replay returns it (JSON), so the first execution sees what later ones will.
      return replayed<T>(outcome);
    }
  }

  /**
   * Holds a step back while another process may be running the call: its function does not run
   * until the fence lifts, and gives up once this process stopped running the call (or the call is
   * cancelled) — its next owner takes the step, once.
   */
  private async whileFenced(step: string): Promise<void> {
    const { fenced, stopped } = this.options;
    while (fenced?.() === true) {
      if (stopped?.() === true)
        throw new TidemarkError(
          ErrorCodes.closed,
          `step ${step} not run: this worker lost the call's partition, and its next owner runs it`,
        );
      await this.sleep(FENCE_POLL_MS, currentExecution()?.abortSignal);
    }
  }

  private async journal(step: string, record: StepRecord): Promise<void> {
    const bytes = Buffer.byteLength(JSON.stringify(record));
    if (bytes > this.options.maxStepBytes)
      throw new TidemarkError(
        ErrorCodes.stepNotJournaled,
        `step ${step}: its outcome takes ${bytes} bytes, more than maxStepBytes (${this.options.maxStepBytes}); journal an id, not the document`,
      );
    await whileUnavailable(() => this.options.store.put(step, record), {
      stopped: () => false,
      onRetry: (error) => this.options.onRetry?.(error),
    });
    this.known.set(step, record);
  }
}

/** A step run or replayed: to the caller's hook, and as an event of the tool's span. */
function report(onStep: CallStepsOptions['onStep'], event: StepReport): void {
  onStep?.(event);
  trace.getActiveSpan()?.addEvent('tidemark.step', {
    'tidemark.step': event.step,
    'tidemark.step.replayed': event.replayed,
    'tidemark.step.ok': event.ok,
    'tidemark.step.attempts': event.attempts,
    ...(event.retryInMs === undefined ? {} : { 'tidemark.step.retry_in_ms': event.retryInMs }),
  });
}

/** Waits `ms`, unless `signal` aborts first: then throws its reason (the tool sees why). */
async function waitOrAbort(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw signal?.aborted === true ? signal.reason : error;
  }
}

/** The effect key of a step of a call: a digest, so it says nothing of the session it is in. */
function effectKeyOf(callId: string, step: string): string {
  return `tm-${createHash('sha256').update(`${callId}\u0000${step}`).digest('base64url').slice(0, 32)}`;
}

function isNotJournaled(error: unknown): boolean {
  return error instanceof TidemarkError && error.code === ErrorCodes.stepNotJournaled;
}
