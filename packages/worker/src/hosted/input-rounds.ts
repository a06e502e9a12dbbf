import { randomBytes } from 'node:crypto';
import {
  inputRequired,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type InputRequest,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { CallHooks } from './child-pool.js';

// A hosted server asks for input the push way: `elicitation/create` or `sampling/createMessage`
// in the middle of its call. A call on the 2026-07-28 revision — a task, a stateless call — has
// no push channel: its client answers an `input_required` result and calls again with the answer
// (multi-round-trip input). Between the rounds the child's call waits here, parked in this
// process; the round that brings the answer hands it to the child and goes on waiting for what the
// child does next — its result, or another question. A round that finds no parked call (its
// partition moved, the worker restarted, it waited too long) runs the call again from its start.

/** The key the one question of a round is asked under. */
export const INPUT_KEY = 'hosted-server';
/** How long a parked call waits for its client's answer before it is abandoned. */
const PARKED_MS = 15 * 60_000;

type ChildRequest = Parameters<NonNullable<CallHooks['onRequest']>>[0];

interface Question {
  readonly request: ChildRequest;
  answer(result: unknown): void;
  fail(error: unknown): void;
}

/** What the child's call does next: answer, fail, or ask. */
type Next =
  | { readonly result: CallToolResult }
  | { readonly error: unknown }
  | { readonly question: Question };

/**
 * A hosted call as the rounds see it: the child's call, started once, and the steps it takes —
 * each question it asks while no client can be asked the push way, then its end.
 */
export class ChildRun {
  readonly abort = new AbortController();
  private readonly steps: Next[] = [];
  private wake: (() => void) | undefined;

  /**
   * @param round what the current round passes the child's messages to (`relayTo`): each round
   *   that resumes the run sets its own (`hooks`)
   * @param start starts the child's call with the hooks `callHooks` gives
   */
  constructor(
    public round: Omit<CallHooks, 'signal'>,
    start: (hooks: CallHooks) => Promise<CallToolResult>,
  ) {
    start(this.callHooks()).then(
      (result) => this.push({ result }),
      (error: unknown) => this.push({ error }),
    );
  }

  /** The child's progress and log to the current round; its questions through `ask`. */
  private callHooks(): CallHooks {
    return {
      signal: this.abort.signal,
      onProgress: (progress) => this.round.onProgress?.(progress),
      onLog: (params) => this.round.onLog?.(params),
      onRequest: (request) => this.ask(request),
    };
  }

  /**
   * Asks the current round's client the push way; where the call's revision has no push
   * channel, the question becomes this run's next step, answered by a later round.
   */
  private async ask(request: ChildRequest): Promise<unknown> {
    try {
      const push = this.round.onRequest;
      if (push === undefined) throw new Error('no client to ask');
      return await push(request);
    } catch (error) {
      if (!(
        error instanceof SdkError && error.code === SdkErrorCode.MethodNotSupportedByProtocolVersion
      ))
        throw error;
      return new Promise<unknown>((answer, fail) =>
        this.push({ question: { request, answer, fail } }),
      );
    }
  }

  /** The child's next step. */
  async next(): Promise<Next> {
    while (this.steps.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.steps.shift()!;
  }

  private push(next: Next): void {
    this.steps.push(next);
    this.wake?.();
    this.wake = undefined;
  }
}

/** Runs waiting for their client's answer, under the opaque `requestState` their round returned. */
export class ParkedRuns {
  private readonly parked = new Map<
    string,
    { run: ChildRun; question: Question; owner: string; timer: NodeJS.Timeout }
  >();

  /**
   * Parks `run` until a round brings the answer to `question`; the round's answer: the question
   * as an input request, and the state that finds the run again (random: unguessable; bound to
   * the subject that asked, so no other can answer it).
   */
  park(run: ChildRun, question: Question, owner: string): InputRequiredResult {
    const token = randomBytes(18).toString('base64url');
    const timer = setTimeout(() => {
      this.parked.delete(token);
      question.fail(new Error('no answer came in time'));
      run.abort.abort(new Error('the call waited too long for its input'));
    }, PARKED_MS);
    timer.unref();
    this.parked.set(token, { run, question, owner, timer });
    const { method, params } = question.request;
    return inputRequired({
      inputRequests: { [INPUT_KEY]: { method, params } as InputRequest },
      requestState: token,
    });
  }

  /** The run parked under `token` for `owner`, answered with `response`; undefined when none is. */
  resume(token: unknown, owner: string, response: unknown): ChildRun | undefined {
    const entry = typeof token === 'string' ? this.parked.get(token) : undefined;
    if (entry === undefined || entry.owner !== owner || response === undefined) return undefined;
    this.parked.delete(token as string);
    clearTimeout(entry.timer);
    entry.question.answer(response);
    return entry.run;
  }

  /** Abandons every parked run (the worker stops). */
  close(): void {
    for (const { run, question, timer } of this.parked.values()) {
      clearTimeout(timer);
      question.fail(new Error('the worker stopped'));
      run.abort.abort(new Error('the worker stopped'));
    }
    this.parked.clear();
  }
}
