// What a step journals and hands back: its value as JSON (what a replay returns), the error it
// threw as a record, and the outcome replayed.
import { ErrorCodes, messageOf, TidemarkError } from '@tidemark/protocol';
import type { StepOutcome } from '@tidemark/log';
import { StepFailedError } from '@tidemark/tools';

export function replayed<T>(outcome: StepOutcome): T {
  if (!outcome.ok) throw new StepFailedError(outcome.error);
  return outcome.value as T;
}

export function asJson(step: string, value: unknown): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new TidemarkError(
      ErrorCodes.stepNotJournaled,
      `step ${step}: its value is not JSON (${messageOf(error)})`,
      { cause: error },
    );
  }
  return text === undefined ? undefined : JSON.parse(text);
}

export function errorRecord(error: unknown): Extract<StepOutcome, { ok: false }>['error'] {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { code, data } = error as { code?: unknown; data?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(isJsonScalar(code) ? { code } : {}),
    ...(data === undefined ? {} : { data: safeJson(data) }),
  };
}

function isJsonScalar(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function safeJson(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
