import type { StandardSchemaWithJSON } from '@modelcontextprotocol/server';
import {
  EVENT_DELIVERIES,
  positiveInteger,
  type EventDelivery,
  type EventTypeDescriptor,
} from '@tidemark/protocol';

// An event type a tool module offers (the MCP Events extension): what a subscription's arguments
// and an occurrence's data look like, how clients may receive it, how long it can be replayed,
// and — for a type read from an upstream — the source that reads it by position.

/** What a source is given: one subscription stream's arguments and where to read from. */
export interface EventSourceContext<Args> {
  readonly arguments: Args;
  /**
   * The position after the last occurrence already recorded (what the source yielded with it), or
   * undefined the first time: then the source starts from now.
   */
  readonly position: string | undefined;
  /** Aborted when the source should stop (the stream's partition moved, the worker stops). */
  readonly signal: AbortSignal;
}

/** One occurrence a source read. */
export interface SourcedOccurrence<Data> {
  readonly data: Data;
  /** Where the source resumes after this occurrence (kept in the log with it). */
  readonly position: string;
  /** The upstream's own id when it has one: clients deduplicate on it. Default: derived. */
  readonly eventId?: string;
  /** When it happened. Default: when it was read. */
  readonly timestamp?: Date;
}

/** Reads an upstream from a position, yielding occurrences as they happen, until aborted. */
export type EventSource<Args, Data> = (
  context: EventSourceContext<Args>,
) => AsyncIterable<SourcedOccurrence<Data>>;

export interface EventTypeDefinition<Args, Data> {
  /** The name clients subscribe to: letters, digits and `._-/`, 1–128 characters. */
  readonly name: string;
  readonly description?: string;
  /** The subscription arguments (a Zod 4 schema, or any Standard Schema with JSON Schema). */
  readonly inputSchema: StandardSchemaWithJSON<Args>;
  /** An occurrence's data: an object. */
  readonly payloadSchema: StandardSchemaWithJSON<Data>;
  /**
   * How clients may receive it.
   * @default ['poll', 'push', 'webhook']
   */
  readonly delivery?: readonly EventDelivery[];
  /**
   * How long an occurrence can be replayed to a subscriber that comes back with a cursor.
   * @default 1 h
   */
  readonly replayWindowMs?: number;
  /**
   * Reads the occurrences from an upstream; without one, they are emitted by the module's code.
   * (A method, so that a module's list of event types can hold types of different arguments.)
   */
  source?(context: EventSourceContext<Args>): AsyncIterable<SourcedOccurrence<Data>>;
}

/** An event type, checked, with its schemas as JSON Schema (what `events/list` answers). */
export interface EventType<Args = unknown, Data = unknown>
  extends
    Required<Pick<EventTypeDefinition<Args, Data>, 'delivery' | 'replayWindowMs'>>,
    Omit<EventTypeDefinition<Args, Data>, 'delivery' | 'replayWindowMs'> {
  readonly descriptor: EventTypeDescriptor;
}

const NAME = /^[A-Za-z0-9._/-]{1,128}$/;
const DEFAULT_REPLAY_WINDOW_MS = 60 * 60 * 1000;

/** Types an event type and checks it now: a bad name, delivery or schema fails at startup. */
export function defineEventType<Args, Data>(
  definition: EventTypeDefinition<Args, Data>,
): EventType<Args, Data> {
  const where = `defineEventType(${JSON.stringify(definition.name)})`;
  if (typeof definition.name !== 'string' || !NAME.test(definition.name))
    throw new TypeError(`${where}: name must be 1–128 letters, digits or ._-/`);
  const delivery = definition.delivery ?? EVENT_DELIVERIES;
  if (delivery.length === 0 || delivery.some((mode) => !EVENT_DELIVERIES.includes(mode)))
    throw new TypeError(
      `${where}: delivery must be a non-empty list of ${EVENT_DELIVERIES.join(', ')}, got ${JSON.stringify(delivery)}`,
    );
  const replayWindowMs = definition.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
  positiveInteger(`${where}: replayWindowMs`, replayWindowMs);
  if (definition.source !== undefined && typeof definition.source !== 'function')
    throw new TypeError(`${where}: source must be a function`);
  const payloadSchema = jsonSchemaOf(where, 'payloadSchema', definition.payloadSchema);
  if (payloadSchema['type'] !== 'object')
    throw new TypeError(`${where}: payloadSchema must describe an object (an occurrence's data)`);
  return {
    ...definition,
    delivery: [...delivery],
    replayWindowMs,
    descriptor: {
      name: definition.name,
      ...(definition.description === undefined ? {} : { description: definition.description }),
      delivery: [...delivery],
      inputSchema: jsonSchemaOf(where, 'inputSchema', definition.inputSchema),
      payloadSchema,
    },
  };
}

function jsonSchemaOf(
  where: string,
  field: string,
  schema: StandardSchemaWithJSON<unknown> | undefined,
): Record<string, unknown> {
  const converter = schema?.['~standard']?.jsonSchema;
  if (typeof converter?.input !== 'function')
    throw new TypeError(`${where}: ${field} must be a Standard Schema with JSON Schema (Zod 4)`);
  return converter.input({ target: 'draft-2020-12' });
}

/** Whether `value` passes `schema`: the parsed value, or the first issue's message. */
export async function checkAgainst<T>(
  schema: StandardSchemaWithJSON<T>,
  value: unknown,
): Promise<{ ok: true; value: T } | { ok: false; message: string }> {
  const result = await schema['~standard'].validate(value);
  if (result.issues === undefined) return { ok: true, value: result.value };
  const [issue] = result.issues;
  const path = (issue?.path ?? [])
    .map((key) => (typeof key === 'object' ? String(key.key) : String(key)))
    .join('.');
  return { ok: false, message: `${path === '' ? '' : `${path}: `}${issue?.message ?? 'invalid'}` };
}
