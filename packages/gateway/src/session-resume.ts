import type { Request, Response } from 'express';
import { finalMessage, type TracedStreamHead } from '@tidemark/log';
import {
  decideResume,
  formatGeneration,
  parseSessionId,
  partitionForSession,
  PRIMING_PROTOCOL_VERSION,
  resetNotification,
  STANDALONE_STREAM,
  StreamCursor,
  verifyEventId,
  type EventIdVerification,
  type ResumeDecision,
  type SessionId,
  type StreamHead,
  newSessionId,
} from '@tidemark/protocol';
import { HttpRefusals } from './http/http-refusals.js';
import { recordResume } from '@tidemark/otel';
import type { Asker } from './auth/index.js';
import { streamMinter, type GatewayContext } from './gateway-context.js';
import { recordResumeSpan } from './gateway-spans.js';
import { sendRefusal } from './http/http-answers.js';
import { headerValue } from './http/http-guards.js';
import { findSession, negotiatedVersion } from './session-lane.js';
import type { SseStream } from './http/sse.js';
import { deliverStream, streamFromNow } from './request-answers.js';

/**
 * GET of the session lane: without `Last-Event-ID` the session's standalone stream from now on;
 * with one, the resume decision — the events the client missed, a reset, or an explicit refusal.
 */
export async function handleGet(
  ctx: GatewayContext,
  req: Request,
  res: Response,
  asker: Asker,
): Promise<void> {
  const lastEventId = req.headers['last-event-id'];
  // A resume reads its claimed stream's head while the session is looked up — two reads of the
  // log at once, not one after the other. Nothing of it is used unless the session checks pass.
  const claimed =
    lastEventId === undefined ? undefined : readClaim(ctx, req, headerValue(lastEventId));
  const found = await findSession(ctx, req, asker);
  if (!found.ok) return sendRefusal(res, found.refusal);
  const session = found.value.id;
  const full = ctx.streams.refusalIfFull(session, asker.share);
  if (full !== undefined) return sendRefusal(res, full);
  const version = negotiatedVersion(req, found.value.protocolVersion);
  if (!version.ok) return sendRefusal(res, version.refusal);
  const to = { session, share: asker.share };
  if (claimed === undefined) return openStandalone(ctx, res, to);
  const read = await claimed;
  if ('failure' in read) throw read.failure;
  return resume(ctx, res, to, read, version.value >= PRIMING_PROTOCOL_VERSION);
}

/** A `Last-Event-ID` verified for the session the request names, and the head it claims. */
interface Claimed {
  readonly lastEventId: string | undefined;
  readonly claim: EventIdVerification;
  readonly traced: TracedStreamHead | undefined;
}

/**
 * Reads the claim. Never rejects (the request may be refused before the claim is looked at, and
 * nothing may be left to reject unhandled): a failed head read is the `failure` its user throws.
 */
async function readClaim(
  ctx: GatewayContext,
  req: Request,
  lastEventId: string | undefined,
): Promise<Claimed | { failure: unknown }> {
  const session = parseSessionId(headerValue(req.headers['mcp-session-id']) ?? '');
  const claim = verifyEventId(lastEventId, {
    // Without a session, no id verifies as its: a fresh session's id matches none.
    session: session ?? newSessionId(),
    keyring: ctx.keyring,
    nowMs: ctx.now(),
  });
  try {
    const traced =
      claim.ok && session !== undefined
        ? await ctx.heads.getTraced(session, claim.claim.stream)
        : undefined;
    return { lastEventId, claim, traced };
  } catch (failure) {
    return { failure };
  }
}

/** The standalone stream: server messages not tied to a request, from now on. */
async function openStandalone(
  ctx: GatewayContext,
  res: Response,
  { session, share }: { session: SessionId; share: string },
): Promise<void> {
  const { partition, stream, highWatermark, cursor } = await streamFromNow(
    ctx,
    session,
    STANDALONE_STREAM,
    undefined,
  );
  const sse = ctx.streams.open(res, session, share);
  deliverStream(ctx, sse, { session, stream, partition, fromOffset: highWatermark }, cursor);
}

async function resume(
  ctx: GatewayContext,
  res: Response,
  { session, share }: { session: SessionId; share: string },
  { lastEventId, claim, traced }: Claimed,
  primes: boolean,
): Promise<void> {
  const partition = partitionForSession(session, ctx.partitionCount);
  // Read after the head: the worker writes a record to `events` before the head naming it, so
  // this high watermark is past everything the head knows (a final record included).
  const offsets = await ctx.eventOffsets.read(partition);
  const decision = decideResume({
    claim,
    logIdentity: ctx.logIdentity,
    partition,
    logStartOffset: offsets.logStartOffset,
    highWatermark: offsets.highWatermark,
    head: traced?.head,
  });
  recordResumeSpan(session, claim, traced, decision);
  recordResume(decision.outcome, decision.reason);
  observeResume(ctx, session, claim, traced, decision);
  if (decision.outcome === 'invalid') {
    sendRefusal(res, HttpRefusals.invalidResume(decision.reason));
    return;
  }
  const sse = ctx.streams.open(res, session, share);
  if (decision.outcome === 'reset')
    sse.event(undefined, resetNotification(decision.reason, decision.generation));
  const priming = primes
    ? primingId(ctx, session, partition, decision, lastEventId, traced?.head)
    : undefined;
  if (priming !== undefined) sse.prime(priming);
  replay(ctx, sse, session, partition, decision, offsets.highWatermark);
}

/**
 * The id a resumed stream starts with, so that a client whose stream drops again before the next
 * event still resumes from the right place. (The SDK's client tracks the last id it *received* on
 * a stream, not the one it resumed with: a resumed stream cut before any event reconnects without
 * `Last-Event-ID` — typescript-sdk#2499 — and a call waiting meanwhile, asleep or for its input,
 * never gets its answer.) A continuation repeats the client's own claim; a reset gives the
 * position just before what it replays: the generation's start, or — its events deleted — the
 * record before the first one still held (the seq before it known from the plan, or, when every
 * record the head knows of is gone, the head's last). Only a reset that reads from an unknown seq
 * among records still held goes unprimed.
 */
function primingId(
  ctx: GatewayContext,
  session: SessionId,
  partition: number,
  decision: Exclude<ResumeDecision, { outcome: 'invalid' }>,
  lastEventId: string | undefined,
  head: StreamHead | undefined,
): string | undefined {
  const { plan } = decision;
  if (plan.kind !== 'read') return undefined;
  if (decision.outcome === 'resume') return lastEventId;
  const mint = streamMinter(ctx, session, partition, decision.stream);
  if (plan.nextSeq === 1) return mint(plan.fromOffset, undefined, 0);
  if (plan.generation === undefined || plan.fromOffset === 0n) return undefined;
  const seenSeq =
    plan.nextSeq !== undefined
      ? plan.nextSeq - 1
      : head !== undefined && head.lastOffset < plan.fromOffset
        ? head.lastSeq
        : undefined;
  return seenSeq === undefined ? undefined : mint(plan.fromOffset - 1n, plan.generation, seenSeq);
}

/** Carries out a resume or reset decision's plan on an open stream. */
function replay(
  ctx: GatewayContext,
  sse: SseStream,
  session: SessionId,
  partition: number,
  decision: Exclude<ResumeDecision, { outcome: 'invalid' }>,
  highWatermark: bigint,
): void {
  const { stream, plan } = decision;
  if (plan.kind === 'none') return sse.end();
  if (plan.kind === 'final') {
    const mint = streamMinter(ctx, session, partition, stream);
    const id = mint(plan.terminal.offset, plan.generation, plan.terminal.seq);
    // A final message in parts is read from the log, where the head does not hold it.
    void finalMessage(ctx.port, ctx.topics.events, partition, session, plan.terminal).then(
      (payload) => {
        if (payload !== undefined) sse.event(id, payload);
        sse.end();
      },
      () => sse.end(),
    );
    return;
  }
  const cursor = new StreamCursor<unknown>({
    generation: plan.generation,
    nextSeq: plan.nextSeq,
    clientHasEvents: plan.clientHasEvents,
    fromOffset: plan.fromOffset,
    terminal: plan.terminal,
  });
  const at = { session, stream, partition, fromOffset: plan.fromOffset };
  deliverStream(ctx, sse, at, cursor, {
    caughtUpAt: highWatermark,
    terminal: plan.terminal,
    replay: true,
  });
}

/** Hands the decision to the gateway's observer (a console), with generations as text. */
function observeResume(
  ctx: GatewayContext,
  session: SessionId,
  claim: EventIdVerification,
  traced: TracedStreamHead | undefined,
  decision: ResumeDecision,
): void {
  const observe = ctx.options.onResume;
  if (observe === undefined) return;
  const claimed = claim.ok ? claim.claim : undefined;
  observe({
    atMs: Date.now(),
    session,
    outcome: decision.outcome,
    reason: decision.reason,
    ...(claimed === undefined ? {} : { stream: claimed.stream }),
    ...(claimed?.generation === undefined
      ? {}
      : { claimedGeneration: formatGeneration(claimed.generation) }),
    ...(traced === undefined ? {} : { generation: formatGeneration(traced.head.generation) }),
    ...(decision.outcome === 'resume' ? {} : { detail: decision.detail }),
  });
}
