// Durable sleep (`Execution.sleep`): the wake time is a step of the call's journal, and a call
// that sleeps long enough leaves its tool: `Asleep` unwinds it to the retry wrapper, which ends the
// invocation without an answer, and the lane (`CallExecution.untilAnswered`) runs it again on time.
import { invalidOption } from '@tidemark/protocol';
import { currentExecution, type SleepFunction, type StepFunction } from '@tidemark/tools';

/** Sleeps shorter than this wait in place: running the tool again would cost more than the slot. */
const SUSPEND_AT_MS = 1000;
/** The longest sleep: a year. */
export const MAX_SLEEP_MS = 365 * 24 * 60 * 60 * 1000;
/** Longest single timer (setTimeout's bound); longer waits are taken in turns. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Thrown out of a tool by a sleep it does not wait in place: not a failure — the call is asleep
 * until `wakeAtMs`. Only the retry wrapper catches it (a tool that catches it anyway still sleeps:
 * the lane discards what it answered and runs it again on time).
 */
export class Asleep extends Error {
  constructor(
    readonly wakeAtMs: number,
    /** The highest progress the call wrote so far (its next generation goes on from there). */
    readonly progress = 0,
    /** What the call rests under (`SignalDesk`): its signal's answer wakes it early. */
    readonly restKey?: string,
  ) {
    super(`the call sleeps until ${new Date(wakeAtMs).toISOString()}`);
    this.name = 'Asleep';
  }
}

/**
 * `Execution.sleep` over a call's `step`: the wake time journaled once, then waited in place
 * (`wait`) or, when `suspend` is given and the wait is long, the call is suspended until then.
 */
export function durableSleep(
  step: StepFunction,
  wait: (ms: number, signal: AbortSignal | undefined) => Promise<void>,
  suspend: ((wakeAtMs: number) => void) | undefined,
  /** Whether a step's function runs now (a sleep there is refused). */
  inStep: () => boolean,
): SleepFunction {
  return async (name, ms) => {
    if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_SLEEP_MS)
      throw invalidOption('sleep ms', `an integer number of milliseconds, 0..${MAX_SLEEP_MS}`, ms);
    if (inStep())
      throw invalidOption(
        'sleep',
        'a sleep outside any step (a step runs once; a sleep waits)',
        name,
      );
    const signal = currentExecution()?.abortSignal;
    if (signal?.aborted === true) throw signal.reason;
    const wakeAtMs = await step(`sleep ${name}`, () => Date.now() + ms);
    const leftMs = wakeAtMs - Date.now();
    if (leftMs <= 0) return;
    if (suspend !== undefined && leftMs >= SUSPEND_AT_MS) {
      suspend(wakeAtMs);
      throw new Asleep(wakeAtMs);
    }
    await wait(leftMs, signal);
  };
}

/** Waits until `wakeAtMs`; false when `signal` aborted first. */
export async function untilWake(wakeAtMs: number, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    if (signal.aborted) return false;
    const leftMs = wakeAtMs - Date.now();
    if (leftMs <= 0) return true;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(leftMs, MAX_TIMER_MS));
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
