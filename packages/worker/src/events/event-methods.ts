import {
  SUBSCRIPTION_ID_META_KEY,
  type McpServer,
  type ServerContext,
} from '@modelcontextprotocol/server';
import {
  EVENTS_EXTENSION,
  EventMethods,
  EventNotifications,
  type EventOccurrence,
} from '@tidemark/protocol';
import type { EventType } from '@tidemark/tools';
import * as z from 'zod';
import type { EventService } from './event-service.js';
import { authenticatedSubject, invalidParams, subscribedStream } from './event-stream-params.js';
import { attachWebhookMethods } from './webhook-methods.js';

// The Events extension's read methods on a worker's MCP server: `events/list`, `events/poll` and
// `events/stream` (push), answered from the occurrences in the log — so any worker answers any
// stream, and a cursor from one answer resumes on another. Shapes as SEP-3415 gives them
// (docs/design/events.md).

/** Occurrences one poll (or one read of a push stream) returns at most. */
const MAX_EVENTS_PER_POLL = 1_000;
const DEFAULT_EVENTS_PER_POLL = 100;
/**
 * The occurrences of one page take at most this many bytes (as JSON): a poll's answer is one record
 * of `events`, and a thousand occurrences of 252 KiB would never fit Kafka's 4 MiB. The first
 * occurrence always goes, whatever its size (each is at most 252 KiB).
 */
const MAX_PAGE_BYTES = 1024 * 1024;
/** An idle push stream waits this long at most for a new occurrence (a long poll). */
const PUSH_WAIT_MS = 500;

const argumentsSchema = z.record(z.string(), z.unknown()).optional();
const ListParams = z.object({ cursor: z.string().optional() }).passthrough();
const PollParams = z
  .object({
    name: z.string(),
    arguments: argumentsSchema,
    cursor: z.string().nullable().optional(),
    maxEvents: z.number().int().min(1).optional(),
    maxAgeMs: z.number().int().min(0).optional(),
  })
  .passthrough();
const StreamParams = PollParams.omit({ maxEvents: true });

/** Serves the Events extension on `server` when the worker's modules offer event types. */
export function attachEventMethods(server: McpServer, service: EventService | undefined): void {
  if (service === undefined || service.types.size === 0) return;
  const low = server.server;
  // The extension, as SEP-3415 declares it; and `events`, which the clients check (the AI SDK's
  // `serverCapabilities.events`).
  low.registerCapabilities({
    extensions: { [EVENTS_EXTENSION]: {} },
    events: {},
  } as Parameters<typeof low.registerCapabilities>[0]);
  low.setRequestHandler(EventMethods.list, { params: ListParams }, (params) => {
    if (params.cursor !== undefined)
      throw invalidParams('unknown cursor: events/list has one page');
    return { events: [...service.types.values()].map((type) => ({ ...type.descriptor })) };
  });
  low.setRequestHandler(EventMethods.poll, { params: PollParams }, (params, ctx) =>
    poll(service, params, authenticatedSubject(ctx)),
  );
  low.setRequestHandler(EventMethods.stream, { params: StreamParams }, (params, ctx) =>
    push(service, params, ctx),
  );
  if ([...service.types.values()].some((type) => type.delivery.includes('webhook')))
    attachWebhookMethods(low, service);
}

type Subscribed = z.infer<typeof StreamParams> & { maxEvents?: number | undefined };

/**
 * Who reads, for the cap on a subject's streams: its subject, or without authentication every
 * client together (`anonymous`).
 */
const readerOf = (subject: string | undefined): string => subject ?? 'anonymous';

async function poll(
  service: EventService,
  params: z.infer<typeof PollParams>,
  subject: string | undefined,
) {
  const maxEvents = Math.min(params.maxEvents ?? DEFAULT_EVENTS_PER_POLL, MAX_EVENTS_PER_POLL);
  const stream = await subscribedStream(service, params, 'poll', subject);
  const page = await read(
    service,
    stream,
    params.cursor ?? undefined,
    maxEvents,
    params,
    readerOf(subject),
  );
  return {
    events: page.events,
    cursor: page.cursor,
    truncated: page.truncated,
    // A full page: there is more now. Otherwise a pace that keeps a poller's lease alive.
    nextPollMs: page.full ? 0 : Math.min(1_000, service.options.leaseMs / 4),
  };
}

async function push(service: EventService, params: Subscribed, ctx: ServerContext) {
  const subject = authenticatedSubject(ctx);
  const stream = await subscribedStream(service, params, 'push', subject);
  const reader = readerOf(subject);
  const { signal } = ctx.mcpReq;
  const meta = { [SUBSCRIPTION_ID_META_KEY]: String(ctx.mcpReq.id) };
  const notify = (method: string, body: Record<string, unknown>) =>
    ctx.mcpReq.notify({ method, params: { ...body, _meta: meta } });
  // Read before anything is sent: a refused cursor is the request's error, not a broken stream.
  let page = await read(
    service,
    stream,
    params.cursor ?? undefined,
    DEFAULT_EVENTS_PER_POLL,
    params,
    reader,
  );
  await notify(EventNotifications.active, {
    cursor: params.cursor ?? page.cursor,
    ...(page.truncated ? { truncated: true } : {}),
  });
  let lastSentMs = Date.now();
  const endsAtMs = lastSentMs + service.options.pushMaxMs;
  for (;;) {
    for (const event of page.events) await notify(EventNotifications.event, { ...event });
    if (page.events.length > 0) lastSentMs = Date.now();
    if (!page.full) {
      if (Date.now() - lastSentMs >= service.options.heartbeatMs) {
        await notify(EventNotifications.heartbeat, { cursor: page.cursor });
        lastSentMs = Date.now();
      }
      // Until something is written, or the next heartbeat is due (never later than promised).
      const untilHeartbeat = lastSentMs + service.options.heartbeatMs - Date.now();
      const waitMs = Math.max(1, Math.min(PUSH_WAIT_MS, untilHeartbeat, endsAtMs - Date.now()));
      await service.occurrences.waitPast(stream.key, page.next, waitMs);
    }
    if (signal.aborted) return {};
    // Its life is bounded: answered with where to go on from (every event before it was sent).
    if (Date.now() >= endsAtMs) return { cursor: page.cursor };
    page = await read(service, stream, page.cursor, DEFAULT_EVENTS_PER_POLL, params, reader);
  }
}

interface Page {
  readonly events: EventOccurrence[];
  readonly cursor: string;
  /** The offset the cursor stands for. */
  readonly next: bigint;
  readonly truncated: boolean;
  readonly full: boolean;
}

/** A page of a stream from a cursor, older occurrences than the type replays dropped (`truncated`). */
async function read(
  service: EventService,
  stream: { key: string; type: EventType; arguments: Record<string, unknown> },
  cursor: string | undefined,
  maxEvents: number,
  params: { maxAgeMs?: number | undefined },
  reader: string,
): Promise<Page> {
  const { occurrences } = service;
  const nowMs = Date.now();
  await service.want(stream, nowMs, reader);
  const offset = await occurrences.offsetOf({ stream: stream.key, cursor, nowMs });
  if (typeof offset !== 'bigint')
    throw invalidParams(`cursor refused: ${offset.detail}`, { reason: offset.problem });
  const page = await occurrences.readFrom(stream.key, offset, maxEvents);
  if (page === 'beyond-tail')
    throw invalidParams('cursor refused: the cursor is past the end of the log', {
      reason: 'beyond-tail',
    });
  const maxAgeMs = Math.min(params.maxAgeMs ?? Infinity, stream.type.replayWindowMs);
  const fits = withinBytes(page.events, MAX_PAGE_BYTES);
  const read = fits.length < page.events.length ? fits : page.events;
  const kept = read.filter((event) => nowMs - Date.parse(event.timestamp) <= maxAgeMs);
  const last = read.at(-1);
  const cut = read !== page.events && last !== undefined;
  return {
    events: kept.map(({ offset: _offset, ...event }) => event),
    // Cut short by its bytes: the page ends after its last occurrence, and there is more now.
    cursor: cut ? occurrences.cursorAt(stream.key, last.offset + 1n) : page.cursor,
    next: cut ? last.offset + 1n : page.next,
    truncated: page.truncated || kept.length < read.length,
    full: cut || page.scanCut || page.events.length >= maxEvents,
  };
}

/** The longest prefix of `events` within `maxBytes` as JSON (never empty when `events` is not). */
function withinBytes<E>(events: readonly E[], maxBytes: number): readonly E[] {
  let bytes = 0;
  for (const [index, event] of events.entries()) {
    bytes += Buffer.byteLength(
      JSON.stringify(event, (_key, value: unknown) =>
        typeof value === 'bigint' ? value.toString() : value,
      ),
    );
    if (bytes > maxBytes && index > 0) return events.slice(0, index);
  }
  return events;
}
