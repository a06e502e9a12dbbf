import { formatGeneration, type Generation } from '../ids/generation.js';
import type { ResetReason } from './stream-cursor.js';

/** The JSON-RPC notification that opens a reset stream: the client must discard what it has. */
export const RESET_NOTIFICATION_METHOD = 'notifications/tidemark/reset';

export interface ResetNotification {
  readonly jsonrpc: '2.0';
  readonly method: typeof RESET_NOTIFICATION_METHOD;
  readonly params: { readonly reason: ResetReason; readonly generation: string | null };
}

export function resetNotification(
  reason: ResetReason,
  generation: Generation | undefined,
): ResetNotification {
  return {
    jsonrpc: '2.0',
    method: RESET_NOTIFICATION_METHOD,
    params: { reason, generation: generation === undefined ? null : formatGeneration(generation) },
  };
}
