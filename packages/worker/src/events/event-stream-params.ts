import { ProtocolError } from '@modelcontextprotocol/server';
import { eventStreamKey, JsonRpcErrorCodes, type EventDelivery } from '@tidemark/protocol';
import { checkAgainst, type EventType } from '@tidemark/tools';

// What every Events method checks first: the event type it names (offered for the delivery
// asked), its arguments against the type's input schema — a client's mistake is invalid params,
// said precisely — and whether this subject may read the stream (the type's scope and
// `authorize`). A type scoped per subject gives each authenticated subject its own stream.

/**
 * The event type a request names, offered for `mode`, and the stream `subject` reads for the given
 * arguments (`subject`: the authenticated one; undefined without authentication).
 */
export async function subscribedStream(
  service: { readonly types: ReadonlyMap<string, EventType> },
  params: { name: string; arguments?: Record<string, unknown> | undefined },
  mode: EventDelivery,
  subject: string | undefined,
) {
  const type = service.types.get(params.name);
  if (type === undefined) throw invalidParams(`unknown event type: ${params.name}`);
  if (!type.delivery.includes(mode))
    throw invalidParams(`event type ${type.name} is not offered for ${mode} delivery`, {
      delivery: type.delivery,
    });
  const checked = await checkAgainst(type.inputSchema, params.arguments ?? {});
  if (!checked.ok)
    throw invalidParams(
      `arguments of ${type.name} do not match its inputSchema: ${checked.message}`,
    );
  const args = checked.value as Record<string, unknown>;
  await authorized(type, { subject, arguments: args, delivery: mode });
  const owner = type.scope === 'subject' ? subject : undefined;
  return {
    key: eventStreamKey(type.name, args, owner),
    type,
    arguments: args,
    ...(owner === undefined ? {} : { subject: owner }),
  };
}

/** The key of the stream `subject` reads (or emits to) for `args`: its own, unless the type is shared. */
export function streamKeyOf(
  type: Pick<EventType, 'name' | 'scope'>,
  args: unknown,
  subject: string | undefined,
): string {
  return eventStreamKey(type.name, args, type.scope === 'subject' ? subject : undefined);
}

async function authorized(
  type: EventType,
  context: { subject: string | undefined; arguments: unknown; delivery: EventDelivery },
): Promise<void> {
  if (type.authorize === undefined) return;
  // A hook that throws refuses too: a module's bug never opens a stream.
  const allowed = await Promise.resolve()
    .then(() => type.authorize!(context))
    .catch(() => false);
  if (allowed !== true)
    throw new ProtocolError(
      JsonRpcErrorCodes.forbidden,
      `not authorized to read event type ${type.name} with these arguments`,
    );
}

export function invalidParams(message: string, data?: Record<string, unknown>): ProtocolError {
  return new ProtocolError(JsonRpcErrorCodes.invalidParams, message, data);
}

/** The authenticated subject of a request, if any (`authInfo.extra.subject`, set by the gateway). */
export function authenticatedSubject(ctx: {
  http?: { authInfo?: { extra?: Record<string, unknown> } } | undefined;
}): string | undefined {
  const subject = ctx.http?.authInfo?.extra?.['subject'];
  return typeof subject === 'string' && subject !== '' ? subject : undefined;
}
