import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';

/**
 * `Execution.signal`: a signal of the call, by name (its step's, after `signal `). The first time
 * the call gets here it is journaled with its URL; every replay gets the same signal back.
 */
export type SignalFunction = <T = unknown>(
  name: string,
  options?: SignalOptions<T>,
) => Promise<Signal<T>>;

export interface SignalOptions<T> {
  /**
   * What the POSTed JSON must be (a Standard Schema with JSON Schema: Zod 4). A body that fails it
   * is refused with 400 and the signal stays open; `wait` returns the parsed value.
   */
  readonly schema?: StandardSchemaWithJSON<T>;
  /**
   * How long the signal may be answered, in ms from the first time the call got here; after that
   * its URL answers 404 and `wait` throws `SignalTimeoutError`. Default: no limit.
   */
  readonly timeoutMs?: number;
}

/** A signal a call waits for: a URL to POST its answer to, once. */
export interface Signal<T> {
  readonly name: string;
  /**
   * The capability URL (`<public URL>/signals/<token>`): whoever holds it may answer, once, so send
   * it only to whoever should (an approver, a CI job's webhook). Unguessable, bound to this call;
   * it says nothing of the call it belongs to.
   */
  readonly url: string;
  /** When it stops taking an answer, if it does. */
  readonly expiresAt?: Date;
  /**
   * The JSON POSTed to `url`: at once when it was answered already, else the call gives its slot
   * back and its tool stops until the answer comes (or the signal times out) — on whichever
   * worker then owns the call — and runs again to here, its steps replayed. Throws
   * `SignalTimeoutError` when it expired unanswered.
   */
  wait(): Promise<T>;
  /** As `wait`, with when the answer came and the authenticated subject that sent it, if any. */
  answer(): Promise<SignalAnswer<T>>;
}

/** A signal's answer, as journaled. */
export interface SignalAnswer<T> {
  readonly value: T;
  /** When the worker took it. */
  readonly at: Date;
  /** The subject the gateway authenticated on the POST, when it carried a bearer token. */
  readonly subject?: string;
}

/** A signal that expired unanswered (`SignalOptions.timeoutMs`). */
export class SignalTimeoutError extends Error {
  constructor(readonly signal: string) {
    super(`signal ${signal} expired unanswered`);
    this.name = 'SignalTimeoutError';
  }
}
