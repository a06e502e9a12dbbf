import { setTimeout as sleep } from 'node:timers/promises';
import type { DeliveryState, WebhookSubscription } from '@tidemark/log';
import {
  backoffMs,
  JsonRpcErrorCodes,
  messageOf,
  openSecret,
  type WebhookControl,
} from '@tidemark/protocol';
import { postWebhook, resolveCallback, type DeliveryOutcome } from '@tidemark/webhooks';
import type { EventService } from './event-service.js';
import { gapAt, recentWith, sendsOf, type Send } from './webhook-sends.js';

// Webhook deliveries, made by the worker that owns the subscription's partition: per
// subscription one POST at a time, in log order, each occurrence signed with its `eventId` as
// `webhook-id` (receivers deduplicate on it: delivery is at least once). What was delivered is
// written back to the log, so after a kill -9 the partition's next owner goes on from there.
// A receiver that keeps failing is tried again with jittered, doubling waits up to a bound; then
// the occurrence is given up and a `gap` says so. A 410, or the subscription's end, stops it.

/** Occurrences read at once for one subscription. */
const PAGE = 20;
/** An idle subscription waits this long at most for a new occurrence (a long poll). */
const IDLE_WAIT_MS = 500;
/** The longest wait between two tries of one delivery. */
const MAX_BACKOFF_MS = 5 * 60 * 1000;

interface Running {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

type Key = Pick<WebhookSubscription, 'stream' | 'subject' | 'id'>;

export interface WebhookDeliveriesOptions {
  readonly service: EventService;
  readonly onProblem: (message: string, error?: unknown) => void;
}

/** The delivery loops of the subscriptions of the partitions this worker owns. */
export class WebhookDeliveries {
  private readonly byPartition = new Map<number, Map<string, Running>>();

  constructor(private readonly options: WebhookDeliveriesOptions) {}

  /** Starts loops for the partition's subscriptions not yet delivered here; stops those gone. */
  async sync(partition: number, subscriptions: readonly WebhookSubscription[]): Promise<void> {
    let running = this.byPartition.get(partition);
    if (running === undefined)
      this.byPartition.set(partition, (running = new Map<string, Running>()));
    const live = new Set(subscriptions.map((subscription) => subscription.id));
    for (const subscription of subscriptions)
      if (!running.has(subscription.id)) {
        const abort = new AbortController();
        const done = this.deliver(subscription, abort.signal)
          .catch((error: unknown) =>
            this.options.onProblem(`webhook subscription ${subscription.id} stopped`, error),
          )
          .finally(() => {
            if (running.get(subscription.id)?.abort === abort) running.delete(subscription.id);
          });
        running.set(subscription.id, { abort, done });
      }
    for (const [id, run] of running)
      if (!live.has(id)) {
        running.delete(id);
        await stop(run);
      }
  }

  /** The partition moved: its loops stop (the next owner goes on from what was written). */
  async revoke(partition: number): Promise<void> {
    const running = this.byPartition.get(partition);
    this.byPartition.delete(partition);
    await Promise.all([...(running?.values() ?? [])].map(stop));
  }

  /** Subscriptions delivered here (for tests and the console). */
  get deliveringCount(): number {
    let count = 0;
    for (const running of this.byPartition.values()) count += running.size;
    return count;
  }

  /** One subscription's deliveries, until it ends, goes or the partition moves. */
  private async deliver(initial: WebhookSubscription, signal: AbortSignal): Promise<void> {
    const { registry, occurrences } = this.options.service;
    const failures = { count: 0 };
    while (!signal.aborted) {
      // Read again each page: a refresh changes the end, the start or the secret.
      const subscription = await registry.subscription(initial);
      if (subscription === undefined) return; // unsubscribed
      if (Date.now() >= subscription.expiresAtMs) return this.end(subscription, 'expired');
      let state = await this.stateOf(subscription);
      const page = await occurrences.readFrom(subscription.stream, state.position, PAGE);
      if (page === 'beyond-tail') {
        // The log was replaced under the subscription: go on from its end, and say so.
        const end = await occurrences.endOffset(subscription.stream);
        await this.record(subscription, { ...state, position: end }, 'the log was replaced');
        continue;
      }
      // Retention took occurrences the subscriber had not got: a gap first, never a silent skip.
      const sends: Send[] = page.truncated
        ? [
            gapAt(
              subscription,
              occurrences.cursorAt(subscription.stream, page.logStartOffset),
              page.logStartOffset,
            ),
          ]
        : sendsOf(occurrences, subscription, page.events);
      if (sends.length === 0) {
        if (page.next !== state.position)
          await this.record(subscription, { ...state, position: page.next }); // other streams'
        // Scanned a bounded stretch of a busy partition: on at once; else wait for more.
        if (!page.scanCut) await occurrences.waitPast(subscription.stream, page.next, IDLE_WAIT_MS);
        continue;
      }
      // Delivered one after another, in order; where they stand is written once per page (a
      // takeover delivers at most a page again: receivers deduplicate on the event id).
      let unrecorded = false;
      for (const send of sends) {
        const next = await this.send(subscription, state, send, failures, signal);
        if (next === 'ended') return;
        // A failure was recorded by `send`, with the page's progress before it.
        unrecorded = next !== undefined;
        if (next === undefined) break;
        state = next;
      }
      if (unrecorded && !signal.aborted) await this.record(subscription, state);
    }
  }

  /**
   * One delivery: the state after it (moved on when delivered or given up, the failure noted
   * otherwise), undefined to read again after a wait, or `ended`.
   */
  private async send(
    subscription: WebhookSubscription,
    state: DeliveryState,
    send: Send,
    failures: { count: number },
    signal: AbortSignal,
  ): Promise<DeliveryState | 'ended' | undefined> {
    const { options } = this.options.service;
    const outcome = await this.post(subscription, send.messageId, send.body);
    if (signal.aborted) return undefined;
    const tried = { messageId: send.messageId, atMs: Date.now() };
    if (outcome.ok) {
      failures.count = 0;
      const status = {
        delivered: state.status.delivered + (send.counts ? 1 : 0),
        lastDeliveryAtMs: tried.atMs,
        recent: recentWith(state.status, { ...tried, outcome: String(outcome.status) }),
      };
      return { ...state, position: send.next, status };
    }
    if (outcome.gone) {
      await this.end(subscription, 'gone');
      return 'ended';
    }
    failures.count++;
    const failing = {
      ...state,
      status: {
        ...state.status,
        lastError: outcome.error,
        failingSinceMs: state.status.failingSinceMs ?? Date.now(),
        recent: recentWith(state.status, { ...tried, outcome: outcome.error }),
      },
    };
    if (!outcome.retryable || failures.count >= options.webhookAttempts) {
      // Given up: the occurrence is skipped, and a gap says so first.
      failures.count = 0;
      return (await this.giveUp(subscription, failing, send.next, signal)) ? 'ended' : undefined;
    }
    await this.record(subscription, failing);
    const wait = backoffMs(failures.count - 1, {
      initialMs: options.webhookBackoffMs,
      maxMs: MAX_BACKOFF_MS,
      jitter: true,
    });
    await sleep(wait, undefined, { signal }).catch(() => undefined);
    return undefined;
  }

  /** Where deliveries stand: the state written, unless the client gave a newer start since. */
  private async stateOf(subscription: WebhookSubscription): Promise<DeliveryState> {
    const state = await this.options.service.registry.deliveryState(subscription);
    if (state !== undefined && state.startSetAtMs === subscription.start.setAtMs) return state;
    return {
      position: subscription.start.offset,
      startSetAtMs: subscription.start.setAtMs,
      status: state?.status ?? { delivered: 0 },
    };
  }

  private record(key: Key, state: DeliveryState, problem?: string): Promise<void> {
    if (problem !== undefined) this.options.onProblem(`webhook subscription ${key.id}: ${problem}`);
    return this.options.service.registry.putDeliveryState(key, state);
  }

  /**
   * An occurrence that could not be delivered is skipped — never silently: a `gap` with the cursor
   * after it is delivered first (with the same tries). A receiver that cannot take even that is
   * told the subscription ended (best effort), and it is removed: the client subscribes again
   * from its own cursor, and nothing it has not seen is lost.
   */
  private async giveUp(
    subscription: WebhookSubscription,
    state: DeliveryState,
    next: bigint,
    signal: AbortSignal,
  ): Promise<boolean> {
    const { occurrences, options } = this.options.service;
    const gap = gapAt(subscription, occurrences.cursorAt(subscription.stream, next), next);
    for (let attempt = 0; attempt < options.webhookAttempts && !signal.aborted; attempt++) {
      const outcome = await this.post(subscription, gap.messageId, gap.body);
      if (outcome.ok) {
        const given = `an occurrence was given up after ${options.webhookAttempts} tries (${state.status.lastError ?? 'failed'}); a gap was delivered`;
        await this.record(subscription, { ...state, position: next }, given);
        return false;
      }
      if (outcome.gone || !outcome.retryable) break;
      const wait = backoffMs(attempt, {
        initialMs: options.webhookBackoffMs,
        maxMs: MAX_BACKOFF_MS,
        jitter: true,
      });
      await sleep(wait, undefined, { signal }).catch(() => undefined);
    }
    if (signal.aborted) return false;
    this.options.onProblem(
      `webhook subscription ${subscription.id}: the receiver takes nothing; the subscription ends`,
    );
    await this.end(subscription, 'failing');
    return true;
  }

  /** The subscription is over: the receiver is told (once, best effort) and it is removed. */
  private async end(
    subscription: WebhookSubscription,
    why: 'expired' | 'gone' | 'failing',
  ): Promise<void> {
    if (why !== 'gone') {
      const message =
        why === 'expired'
          ? 'the subscription expired: it was not refreshed in time'
          : 'deliveries kept failing: subscribe again from your cursor';
      const terminated: WebhookControl = {
        type: 'terminated',
        error: { code: JsonRpcErrorCodes.badRequest, message },
      };
      await this.post(
        subscription,
        `end_${subscription.id}_${Date.now()}`,
        JSON.stringify(terminated),
      );
    }
    await this.options.service.registry.dropSubscription(subscription);
  }

  /** Signs and POSTs one body to the subscription's callback, checked again before each POST. */
  private async post(
    subscription: WebhookSubscription,
    messageId: string,
    body: string,
  ): Promise<DeliveryOutcome> {
    const { options } = this.options.service;
    const opened = openSecret(options.keyring, subscription.sealedSecret, subscription.id);
    if (!opened.ok)
      return {
        ok: false,
        status: undefined,
        retryable: false,
        gone: true,
        error: `the subscription's secret does not open (${opened.problem}): the client must subscribe again`,
      };
    try {
      // Resolved and checked for every POST: DNS may have changed since the last (rebinding).
      const target = await resolveCallback(new URL(subscription.url), {
        allowLoopback: options.allowLoopbackWebhooks,
      });
      return await postWebhook({
        target,
        secret: opened.secret,
        messageId,
        subscriptionId: subscription.id,
        body,
      });
    } catch (error) {
      return {
        ok: false,
        status: undefined,
        retryable: true,
        gone: false,
        error: messageOf(error),
      };
    }
  }
}

async function stop(run: Running): Promise<void> {
  run.abort.abort();
  await run.done;
}
