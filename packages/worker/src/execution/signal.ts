// Signals (`Execution.signal`, awakeables): a call asks for one — its URL journaled as a step —
// and waits for the JSON POSTed to it. The answer is journaled by the lane that reads the POST
// (`signalAnswerStep`, see stateless/signal-inbox.ts), so `wait` reads the journal: answered, it returns; not yet, the
// call is suspended as by a sleep (until the signal's expiry), and the answer wakes it early.
import type { JournaledStep } from '@tidemark/log';
import { invalidOption } from '@tidemark/protocol';
import {
  checkAgainst,
  SignalTimeoutError,
  type Signal,
  type SignalAnswer,
  type SignalFunction,
  type StepFunction,
} from '@tidemark/tools';
import { Asleep, MAX_SLEEP_MS } from './sleep.js';

/** What a signal's step journals: its URL, when it expires, and the JSON Schema of its answer. */
export interface AskedSignal {
  readonly url: string;
  readonly expiresAtMs?: number;
  readonly schema?: Record<string, unknown>;
}

/** Where a call's signals come from and go: the worker's journal, or the test harness's answers. */
export interface SignalHost {
  /** The URL of a new signal (its token bound to the call); throws where signals cannot be. */
  mint(name: string, expiresAtMs: number | undefined): string;
  /** The signal's journaled answer, or that it expired (`signalAnswerStep`); none yet: undefined. */
  answered(name: string): Promise<JournaledStep | undefined>;
  /** Journals that the signal expired — unless an answer got in first: what is journaled. */
  expire(name: string): Promise<JournaledStep>;
}

/** Where no signal can be asked for (a bare `CallSteps`). */
export const NO_SIGNALS: SignalHost = {
  mint: (name) => {
    throw invalidOption('signal', 'a call run by a worker or by runTool', name);
  },
  answered: () => Promise.resolve(undefined),
  expire: () => Promise.resolve(answerRecord('expired', Date.now())),
};

/** The value journaled as a signal's answer (under `signalAnswerStep(name)`). */
export interface JournaledAnswer {
  readonly value: unknown;
  readonly subject?: string;
}

/**
 * `Execution.signal` over a call's `step`: the signal journaled once, its `wait` answered from the
 * journal or, when `suspend` is given, the call suspended until its answer (or expiry).
 */
export function durableSignal(
  step: StepFunction,
  host: SignalHost,
  suspend: ((wakeAtMs: number) => void) | undefined,
  /** Whether a step's function runs now (a signal there is refused). */
  inStep: () => boolean,
): SignalFunction {
  return async <T>(name: string, options: Parameters<SignalFunction>[1] = {}) => {
    if (typeof name !== 'string' || name.length === 0 || name.length > 100)
      throw invalidOption('signal name', 'a string of 1..100 characters', name);
    const { timeoutMs, schema } = options;
    if (
      timeoutMs !== undefined &&
      (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_SLEEP_MS)
    )
      throw invalidOption(
        'signal timeoutMs',
        `an integer number of milliseconds, 1..${MAX_SLEEP_MS}`,
        timeoutMs,
      );
    const jsonSchema = schema === undefined ? undefined : schemaOf(schema);
    if (inStep()) throw outsideSteps('signal', name);
    const asked = await step(`signal ${name}`, (): AskedSignal => {
      const expiresAtMs = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
      return {
        url: host.mint(name, expiresAtMs),
        ...(expiresAtMs === undefined ? {} : { expiresAtMs }),
        ...(jsonSchema === undefined ? {} : { schema: jsonSchema }),
      };
    });
    const answer = async (): Promise<SignalAnswer<T>> => {
      if (inStep()) throw outsideSteps('signal wait', name);
      let record = await host.answered(name);
      if (record === undefined) {
        const { expiresAtMs } = asked;
        if (expiresAtMs !== undefined && Date.now() >= expiresAtMs)
          record = await host.expire(name);
        else if (suspend !== undefined) {
          // Woken early by the answer; else at the expiry (or, with none, a year on: again).
          const wakeAtMs = Math.min(expiresAtMs ?? Infinity, Date.now() + MAX_SLEEP_MS);
          suspend(wakeAtMs);
          throw new Asleep(wakeAtMs);
        } else record = await host.expire(name);
      }
      if (!record.outcome.ok) throw new SignalTimeoutError(name);
      const { value, subject } = record.outcome.value as JournaledAnswer;
      let parsed = value as T;
      if (schema !== undefined) {
        const checked = await checkAgainst(schema, value);
        if (!checked.ok)
          throw invalidOption(
            `signal ${name}'s answer`,
            'a value its schema takes',
            checked.message,
          );
        parsed = checked.value as T;
      }
      return {
        value: parsed,
        at: new Date(record.atMs),
        ...(subject === undefined ? {} : { subject }),
      };
    };
    const signal: Signal<T> = {
      name,
      url: asked.url,
      ...(asked.expiresAtMs === undefined ? {} : { expiresAt: new Date(asked.expiresAtMs) }),
      wait: async () => (await answer()).value,
      answer,
    };
    return signal;
  };
}

/** A signal's answer as journaled: the value (and who sent it), or that it expired unanswered. */
export function answerRecord(answer: JournaledAnswer | 'expired', atMs: number): JournaledStep {
  return {
    outcome:
      answer === 'expired'
        ? { ok: false, error: { name: 'SignalTimeoutError', message: 'expired unanswered' } }
        : { ok: true, value: answer },
    generation: 'signal',
    atMs,
    durationMs: 0,
  };
}

function schemaOf(
  schema: NonNullable<Parameters<SignalFunction>[1]>['schema'],
): Record<string, unknown> {
  const converter = schema?.['~standard']?.jsonSchema;
  if (typeof converter?.input !== 'function')
    throw invalidOption(
      'signal schema',
      'a Standard Schema with JSON Schema (Zod 4)',
      typeof schema,
    );
  return converter.input({ target: 'draft-2020-12' });
}

function outsideSteps(what: string, name: string): Error {
  return invalidOption(what, `a ${what} outside any step (a step runs once; a signal waits)`, name);
}
