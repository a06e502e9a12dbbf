import type { CompensateFunction, Execution, StepFunction } from '@tidemark/tools';

/** Where an execution keeps its compensations, out of a tool's sight. */
const REGISTERED = Symbol('tidemark.compensations');

interface Registered {
  readonly name: string;
  readonly fn: Parameters<CompensateFunction>[1];
  readonly options: Parameters<CompensateFunction>[2];
}

type Compensable = Execution & { readonly [REGISTERED]?: Registered[] };

/** Longest compensation name, in characters (its step's name is `compensate <name>`). */
const MAX_NAME = 180;

/**
 * An execution's `compensate`: what a tool registers is kept with the execution (its `step` runs
 * them) until the retry wrapper decides the call failed for good or was cancelled
 * (`runCompensations`).
 */
export function withCompensations<E extends Omit<Execution, 'compensate'>>(
  execution: E,
): E & Pick<Execution, 'compensate'> {
  const registered: Registered[] = [];
  const compensate: CompensateFunction = (name, fn, options) => {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME)
      throw new TypeError(`compensate: a name of 1..${MAX_NAME} characters, got ${String(name)}`);
    if (typeof fn !== 'function') throw new TypeError(`compensate ${name}: expected a function`);
    registered.push({ name, fn, options });
  };
  return Object.assign(execution, { compensate, [REGISTERED]: registered });
}

/**
 * Runs an execution's compensations, the last registered first, each a durable step of its call
 * (`compensate <name>`: a later execution replays it instead of undoing twice). One that fails is
 * reported and the rest still run.
 */
export async function runCompensations(
  execution: Execution | undefined,
  onFailure: (name: string, error: unknown) => void,
): Promise<void> {
  const registered = (execution as Compensable | undefined)?.[REGISTERED];
  if (execution === undefined || registered === undefined) return;
  const step: StepFunction = execution.step;
  for (const { name, fn, options } of [...registered].reverse()) {
    try {
      await step(`compensate ${name}`, fn, options);
    } catch (error) {
      onFailure(name, error);
    }
  }
}
