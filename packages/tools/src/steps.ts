/** What a step's function is given. */
export interface StepContext {
  /** The step's id in its call: its name, with `#2`, `#3` … for later steps of the same name. */
  readonly step: string;
  /**
   * A key that is the same in every execution of this step of this call, and different for every
   * other: pass it to the external API as *its* idempotency key, so a step that was still running
   * when its worker died charges once even though it runs again.
   */
  readonly effectKey: string;
}

/** A durable step: `fn` runs once per call, its outcome journaled; later executions replay it. */
export type StepFunction = <T>(
  name: string,
  fn: (step: StepContext) => T | Promise<T>,
) => Promise<T>;

/** One step a call ran or replayed (for `runTool` and the operator's view). */
export interface StepReport {
  readonly step: string;
  /** True when the outcome came from the journal and the function did not run. */
  readonly replayed: boolean;
  readonly ok: boolean;
}

/**
 * @deprecated Renamed `StepReport` ("event" is the Events extension's and the SSE id's word);
 * this alias goes in the next minor release.
 */
export type StepEvent = StepReport;

/** A step's error as the journal keeps it: what a replay throws again. */
export interface StepError {
  readonly name: string;
  readonly message: string;
  readonly code?: unknown;
  readonly data?: unknown;
}

/** A journaled step's error, thrown again when its step is replayed. */
export class StepFailedError extends Error {
  readonly code: unknown;
  readonly data: unknown;

  constructor(error: StepError) {
    super(error.message);
    this.name = error.name;
    this.code = error.code;
    this.data = error.data;
  }
}
