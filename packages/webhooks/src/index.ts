export { addressClass, mayDeliverTo } from './address-policy.js';
export type { AddressClass } from './address-policy.js';
export { parseCallbackUrl, resolveCallback } from './callback-url.js';
export type { CallbackPolicy, CallbackTarget, Lookup } from './callback-url.js';
export { postWebhook } from './delivery.js';
export type { DeliveryOutcome, WebhookPost } from './delivery.js';
export { verifyCallback } from './verification.js';
export type { CallbackVerification, VerificationOutcome } from './verification.js';
