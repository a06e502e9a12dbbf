import { ProtocolError } from '@modelcontextprotocol/server';
import { eventStreamKey, JsonRpcErrorCodes, type EventDelivery } from '@tidemark/protocol';
import { checkAgainst } from '@tidemark/tools';
import type { EventService } from './event-service.js';

// What every Events method checks first: the event type it names (offered for the delivery
// asked), and its arguments against the type's input schema — a client's mistake is invalid
// params, said precisely.

/** The event type a request names, offered for `mode`, and its stream for the given arguments. */
export async function subscribedStream(
  service: EventService,
  params: { name: string; arguments?: Record<string, unknown> | undefined },
  mode: EventDelivery,
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
  return { key: eventStreamKey(type.name, args), type, arguments: args };
}

export function invalidParams(message: string, data?: Record<string, unknown>): ProtocolError {
  return new ProtocolError(JsonRpcErrorCodes.invalidParams, message, data);
}
