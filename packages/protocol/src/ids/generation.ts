import { parseWorkerEpoch, type WorkerEpoch } from './ids.js';

/**
 * One execution of one stream. `attempt` counts executions of the stream across all workers
 * (1, 2, 3 …), so a later execution always has a higher attempt, even when the same worker gets
 * the stream back; the epoch tells which process ran it.
 */
export interface Generation {
  readonly epoch: WorkerEpoch;
  readonly attempt: number;
}

/** Why a generation started: the first execution, a retry, or another (or restarted) worker taking over. */
export type GenerationCause = 'first' | 'retry' | 'takeover';

export function sameGeneration(a: Generation | undefined, b: Generation | undefined): boolean {
  return a !== undefined && b !== undefined && a.epoch === b.epoch && a.attempt === b.attempt;
}

/** `epoch.attempt`, for headers, logs and the reset notification. */
export function formatGeneration(generation: Generation): string {
  return `${generation.epoch}.${generation.attempt}`;
}

export function parseGeneration(value: string): Generation | undefined {
  const dot = value.indexOf('.');
  if (dot < 0) return undefined;
  const epoch = parseWorkerEpoch(value.slice(0, dot));
  const attemptText = value.slice(dot + 1);
  if (epoch === undefined || !/^[1-9]\d{0,9}$/.test(attemptText)) return undefined;
  const attempt = Number(attemptText);
  return isValidAttempt(attempt) ? { epoch, attempt } : undefined;
}

export function isValidAttempt(attempt: number): boolean {
  return Number.isSafeInteger(attempt) && attempt >= 1 && attempt <= 0xffff_ffff;
}

/** The generation a worker starts for a stream whose latest known generation is `previous`. */
export function nextGeneration(epoch: WorkerEpoch, previous: Generation | undefined): Generation {
  return { epoch, attempt: (previous?.attempt ?? 0) + 1 };
}
