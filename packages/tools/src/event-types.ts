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
   * Whose stream this is: for a type scoped per subject, the authenticated subject that reads it;
   * undefined for a shared type, or without authentication.
   */
  readonly subject: string | undefined;
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

/**
 * Who reads a type's streams. `subject` (the default): each authenticated subject has its own
 * stream for a set of arguments — what a tool emits under Alice's call, only Alice reads, and a
 * source runs for each subject that reads. `shared`: one stream for every subject — say so only
 * for occurrences any client may see (a public feed), and add `authorize` to narrow it.
 */
export type EventScope = 'subject' | 'shared';

/** What `authorize` is asked: may this subject read the stream of these arguments? */
export interface EventReadContext<Args> {
  /** The authenticated subject; undefined without authentication (development). */
  readonly subject: string | undefined;
  readonly arguments: Args;
  /** How it would read: `poll`, `push`, or a `webhook` subscription. */
  readonly delivery: EventDelivery;
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
   * Whose streams they are (see `EventScope`).
   * @default 'subject'
   */
  readonly scope?: EventScope;
  /**
   * Whether a subject may read a stream, asked on every poll, push and webhook subscription before
   * anything is read: false (or a throw) refuses it (`forbidden`, -32003). Without it, any subject
   * reads its own streams of a `subject` type, and every stream of a `shared` one.
   */
  authorize?(context: EventReadContext<Args>): boolean | Promise<boolean>;
  /**
   * Reads the occurrences from an upstream; without one, they are emitted by the module's code.
   * (A method, so that a module's list of event types can hold types of different arguments.)
   */
  source?(context: EventSourceContext<Args>): AsyncIterable<SourcedOccurrence<Data>>;
}

/** An event type, checked, with its schemas as JSON Schema (what `events/list` answers). */
export interface EventType<Args = unknown, Data = unknown>
  extends
    Required<Pick<EventTypeDefinition<Args, Data>, 'delivery' | 'replayWindowMs' | 'scope'>>,
    Omit<EventTypeDefinition<Args, Data>, 'delivery' | 'replayWindowMs' | 'scope'> {
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
  const scope = definition.scope ?? 'subject';
  if (scope !== 'subject' && scope !== 'shared')
    throw new TypeError(
      `${where}: scope must be 'subject' or 'shared', got ${JSON.stringify(scope)}`,
    );
  if (definition.authorize !== undefined && typeof definition.authorize !== 'function')
    throw new TypeError(`${where}: authorize must be a function`);
  const payloadSchema = jsonSchemaOf(where, 'payloadSchema', definition.payloadSchema);
  if (payloadSchema['type'] !== 'object')
    throw new TypeError(`${where}: payloadSchema must describe an object (an occurrence's data)`);
  return {
    ...definition,
    delivery: [...delivery],
    replayWindowMs,
    scope,
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
