import { randomBytes } from 'node:crypto';
import type { CallbackTarget } from './callback-url.js';
import { postWebhook } from './delivery.js';

// Before a subscription is accepted its callback proves it is a receiver that holds the secret
// and wants these deliveries: it is sent a signed `{ type: 'verification', challenge }` and must
// answer with the challenge. A URL that merely answers 200 to anything does not pass.

export interface CallbackVerification {
  readonly secret: string;
  readonly subscriptionId: string;
  /** @default 10 s */
  readonly timeoutMs?: number;
}

export type VerificationOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryable: boolean; readonly error: string };

/** Sends the verification challenge to a checked target; never throws. */
export async function verifyCallback(
  target: CallbackTarget,
  verification: CallbackVerification,
): Promise<VerificationOutcome> {
  const challenge = randomBytes(16).toString('base64url');
  const outcome = await postWebhook({
    target,
    secret: verification.secret,
    messageId: `verify_${challenge}`,
    subscriptionId: verification.subscriptionId,
    body: JSON.stringify({ type: 'verification', challenge }),
    ...(verification.timeoutMs === undefined ? {} : { timeoutMs: verification.timeoutMs }),
  });
  if (!outcome.ok) return { ok: false, retryable: outcome.retryable, error: outcome.error };
  let answer: unknown;
  try {
    answer = JSON.parse(outcome.response);
  } catch {
    answer = undefined;
  }
  if ((answer as { challenge?: unknown } | undefined)?.challenge !== challenge)
    return { ok: false, retryable: false, error: 'the receiver did not answer the challenge' };
  return { ok: true };
}
