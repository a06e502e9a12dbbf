import { ProtocolError, type McpServer, type ServerContext } from '@modelcontextprotocol/server';
import {
  EventMethods,
  isTidemarkError,
  JsonRpcErrorCodes,
  sealSecret,
  subscriptionIdOf,
} from '@tidemark/protocol';
import { parseCallbackUrl, resolveCallback, verifyCallback } from '@tidemark/webhooks';
import { Webhook } from 'standardwebhooks';
import * as z from 'zod';
import type { DeliveryStatus } from '@tidemark/log';
import type { EventService } from './event-service.js';
import { authenticatedSubject, invalidParams, subscribedStream } from './event-stream-params.js';

// `events/subscribe` and `events/unsubscribe`: webhook subscriptions kept in the log. A
// subscription is the same one for the same subject, callback, event and arguments (its id is
// derived from them), so a refresh on any worker renews it; its callback is checked (https, a
// public address after resolution) and must answer a signed verification challenge before the
// subscription is recorded.

/** The longest lifetime a client may ask for. */
const MAX_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const MIN_TTL_MS = 1_000;

const Delivery = z.object({ mode: z.literal('webhook'), url: z.string() }).passthrough();
const SubscribeParams = z
  .object({
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
    delivery: Delivery.extend({ secret: z.string() }),
    cursor: z.string().nullable().optional(),
    ttlMs: z.number().int().min(1).optional(),
    maxAgeMs: z.number().int().min(0).optional(),
  })
  .passthrough();
const UnsubscribeParams = z
  .object({
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
    delivery: Delivery,
  })
  .passthrough();

/** Registers the webhook methods on a server that offers event types. */
export function attachWebhookMethods(low: McpServer['server'], service: EventService): void {
  low.setRequestHandler(EventMethods.subscribe, { params: SubscribeParams }, (params, ctx) =>
    subscribe(service, params, ctx),
  );
  low.setRequestHandler(EventMethods.unsubscribe, { params: UnsubscribeParams }, (params, ctx) =>
    unsubscribe(service, params, ctx),
  );
}

async function subscribe(
  service: EventService,
  params: z.infer<typeof SubscribeParams>,
  ctx: ServerContext,
) {
  const { options, registry, occurrences } = service;
  const subject = subjectOf(service, ctx);
  const stream = await subscribedStream(service, params, 'webhook', authenticatedSubject(ctx));
  const policy = { allowLoopback: options.allowLoopbackWebhooks };
  const url = refusedAsParams(() => parseCallbackUrl(params.delivery.url, policy));
  const secret = params.delivery.secret;
  checkSecret(secret);
  const id = subscriptionIdOf({
    principal: subject,
    url: params.delivery.url,
    name: stream.type.name,
    arguments: stream.arguments,
  });
  const key = { stream: stream.key, subject, id };
  const existing = await registry.subscription(key);
  if (
    existing === undefined &&
    (await registry.countOf(subject)) >= options.maxSubscriptionsPerSubject
  )
    throw new ProtocolError(
      JsonRpcErrorCodes.invalidRequest,
      `this subject holds ${options.maxSubscriptionsPerSubject} webhook subscriptions, the most it may; unsubscribe one first`,
    );
  const target = await refusedAsParamsAsync(() => resolveCallback(url, policy));
  const verified = await verifyCallback(target, { secret, subscriptionId: id });
  if (!verified.ok)
    throw invalidParams(`the callback did not pass verification: ${verified.error}`, {
      retryable: verified.retryable,
    });
  const nowMs = Date.now();
  let start = existing?.start;
  if (params.cursor !== undefined && params.cursor !== null) {
    const offset = await occurrences.offsetOf({ stream: stream.key, cursor: params.cursor, nowMs });
    if (typeof offset !== 'bigint')
      throw invalidParams(`cursor refused: ${offset.detail}`, { reason: offset.problem });
    if (offset !== existing?.start.offset) start = { offset, setAtMs: nowMs };
  }
  start ??= { offset: await occurrences.endOffset(stream.key), setAtMs: nowMs };
  const ttlMs = Math.min(
    Math.max(params.ttlMs ?? options.subscriptionTtlMs, MIN_TTL_MS),
    MAX_TTL_MS,
  );
  const expiresAtMs = nowMs + ttlMs;
  await registry.putSubscription({
    id,
    subject,
    name: stream.type.name,
    arguments: stream.arguments,
    stream: stream.key,
    url: params.delivery.url,
    sealedSecret: sealSecret(options.keyring, secret, id),
    createdAtMs: existing?.createdAtMs ?? nowMs,
    expiresAtMs,
    ...(params.maxAgeMs === undefined ? {} : { maxAgeMs: params.maxAgeMs }),
    start,
  });
  const delivery = await registry.deliveryState(key);
  const position =
    delivery !== undefined && delivery.startSetAtMs === start.setAtMs
      ? delivery.position
      : start.offset;
  const page = await occurrences.readFrom(stream.key, position, 0);
  return {
    id,
    // The AI SDK's receiver answers 410 from this time on: it is when the subscription ends.
    refreshBefore: new Date(expiresAtMs).toISOString(),
    cursor: occurrences.cursorAt(stream.key, position),
    truncated: page !== 'beyond-tail' && page.truncated,
    deliveryStatus: statusOf(delivery?.status),
  };
}

async function unsubscribe(
  service: EventService,
  params: z.infer<typeof UnsubscribeParams>,
  ctx: ServerContext,
) {
  const subject = subjectOf(service, ctx);
  const stream = await subscribedStream(service, params, 'webhook', authenticatedSubject(ctx));
  const id = subscriptionIdOf({
    principal: subject,
    url: params.delivery.url,
    name: stream.type.name,
    arguments: stream.arguments,
  });
  // Idempotent: unsubscribing what is not (or no longer) there is done too.
  await service.registry.dropSubscription({ stream: stream.key, subject, id });
  return {};
}

/** The subject a subscription belongs to: the authenticated one (anonymous only in development). */
function subjectOf(service: EventService, ctx: ServerContext): string {
  const subject = authenticatedSubject(ctx);
  if (subject !== undefined) return subject;
  if (service.options.allowLoopbackWebhooks) return 'anonymous';
  throw new ProtocolError(
    JsonRpcErrorCodes.invalidRequest,
    'webhook subscriptions need an authenticated client: they outlive the request, and are kept for whoever subscribed',
  );
}

/** A Standard Webhooks secret as the clients make them: `whsec_` and base64 of 24–64 bytes. */
function checkSecret(secret: string): void {
  const body = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : undefined;
  const bytes = body === undefined ? 0 : Buffer.from(body, 'base64').length;
  if (body === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(body) || bytes < 24 || bytes > 64)
    throw invalidParams(
      'delivery.secret must be whsec_ followed by base64 of 24 to 64 random bytes',
    );
  new Webhook(secret); // what signs every delivery must accept it
}

function statusOf(status: DeliveryStatus | undefined) {
  if (status === undefined) return { delivered: 0 };
  const iso = (ms: number | undefined) =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  return {
    delivered: status.delivered,
    ...(status.lastDeliveryAtMs === undefined
      ? {}
      : { lastDeliveryAt: iso(status.lastDeliveryAtMs) }),
    ...(status.lastError === undefined ? {} : { lastError: status.lastError }),
    ...(status.failingSinceMs === undefined ? {} : { failingSince: iso(status.failingSinceMs) }),
  };
}

/** A refused callback (`TIDEMARK_WEBHOOK_REFUSED`) is the client's mistake: invalid params. */
function refusedAsParams<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw asParams(error);
  }
}

async function refusedAsParamsAsync<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw asParams(error);
  }
}

function asParams(error: unknown): unknown {
  return isTidemarkError(error) ? invalidParams(error.message, { code: error.code }) : error;
}
