import { createHash } from 'node:crypto';
import {
  canonicalJson,
  ErrorCodes,
  eventStreamKey,
  MAX_WEBHOOK_BODY_BYTES,
  messageOf,
  TidemarkError,
} from '@tidemark/protocol';
import { checkAgainst, type EventType } from '@tidemark/tools';

// Runs an event type's source for one stream (one set of arguments): the arguments checked
// against the input schema first, every occurrence's data against the payload schema, each given
// an id that is the same when the same position is read again (after a restart, on another
// worker), so receivers deduplicate a re-read instead of acting twice.

/** One occurrence as it is recorded: what every delivery carries, and where the source resumes. */
export interface RecordedOccurrence {
  readonly eventId: string;
  readonly name: string;
  /** ISO 8601. */
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly position: string;
}

export interface SourceRunOptions {
  /** The stream's key (default: the shared stream of the arguments). */
  readonly stream?: string | undefined;
  readonly arguments: unknown;
  /** Whose stream it is (a type scoped per subject), as the source is told. */
  readonly subject?: string | undefined;
  /** Where to resume: the position recorded with the last occurrence; undefined starts from now. */
  readonly position?: string | undefined;
  readonly signal: AbortSignal;
  readonly now?: () => Date;
}

/** An occurrence's data leaves room in a 256 KiB delivery for the envelope around it. */
const MAX_DATA_BYTES = MAX_WEBHOOK_BODY_BYTES - 4 * 1024;

/**
 * The occurrences of one stream of `type`, in the order its source yields them, until the signal
 * aborts or the source ends. Arguments that do not match are a client's mistake
 * (`TIDEMARK_INVALID_ARGUMENT`); data that does not match, or is too large, is the module's
 * (`TIDEMARK_TOOL_MODULE`, naming the type and the position).
 */
export async function* sourceOccurrences(
  type: EventType,
  options: SourceRunOptions,
): AsyncGenerator<RecordedOccurrence> {
  if (type.source === undefined)
    throw new TidemarkError(ErrorCodes.toolModule, `event type ${type.name} has no source`);
  const args = await checkAgainst(type.inputSchema, options.arguments ?? {});
  if (!args.ok)
    throw new TidemarkError(
      ErrorCodes.invalidArgument,
      `arguments of ${type.name} do not match its inputSchema: ${args.message}`,
    );
  const stream = options.stream ?? eventStreamKey(type.name, args.value);
  const now = options.now ?? (() => new Date());
  const occurrences = type.source({
    arguments: args.value,
    subject: options.subject,
    position: options.position,
    signal: options.signal,
  });
  for await (const occurrence of occurrences) {
    if (options.signal.aborted) return;
    yield await recorded(type, stream, occurrence, now);
  }
}

async function recorded(
  type: EventType,
  stream: string,
  occurrence: { data: unknown; position: string; eventId?: string; timestamp?: Date },
  now: () => Date,
): Promise<RecordedOccurrence> {
  const where = `event type ${type.name}, position ${JSON.stringify(occurrence.position)}`;
  if (typeof occurrence.position !== 'string' || occurrence.position === '')
    throw moduleError(`${where}: a source must yield a non-empty string position`);
  return {
    eventId: occurrence.eventId ?? derivedId(stream, occurrence.position),
    name: type.name,
    timestamp: (occurrence.timestamp ?? now()).toISOString(),
    data: await checkedData(type, occurrence.data, where),
    position: occurrence.position,
  };
}

/**
 * An occurrence's data, checked against the type's payload schema and the size a delivery
 * carries; a mismatch is the module's mistake (`TIDEMARK_TOOL_MODULE`, saying `where`).
 */
export async function checkedData(
  type: EventType,
  value: unknown,
  where: string,
): Promise<Record<string, unknown>> {
  const data = await checkAgainst(type.payloadSchema, value);
  if (!data.ok) throw moduleError(`${where}: data does not match payloadSchema: ${data.message}`);
  let bytes: number;
  try {
    bytes = Buffer.byteLength(canonicalJson(data.value));
  } catch (error) {
    throw moduleError(`${where}: data is not JSON (${messageOf(error)})`);
  }
  if (bytes > MAX_DATA_BYTES)
    throw moduleError(`${where}: data is ${bytes} bytes, over ${MAX_DATA_BYTES}`);
  return data.value as Record<string, unknown>;
}

/** The same id for the same position of the same stream, wherever and however often it is read. */
function derivedId(stream: string, position: string): string {
  return `evt_${createHash('sha256').update(`${stream}\u0000${position}`).digest().subarray(0, 16).toString('base64url')}`;
}

function moduleError(message: string): TidemarkError {
  return new TidemarkError(ErrorCodes.toolModule, message);
}
