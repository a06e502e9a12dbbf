import { randomUUID } from 'node:crypto';
import { ErrorCodes, eventStreamKey, TidemarkError } from '@tidemark/protocol';
import { checkAgainst, type EmitFunction } from '@tidemark/tools';
import { checkedData } from './event-source-run.js';
import type { EventService } from './event-service.js';

// `currentExecution().emit`: an occurrence from a tool's code, appended to its stream's partition
// from whichever worker runs the tool (only sources need a single owner; the log orders the rest).

/** The emit function tools get on a worker that serves event types. */
export function emitterOf(service: EventService): EmitFunction {
  return async (type, args, data, options = {}) => {
    const offered = service.types.get(type.name);
    if (offered === undefined)
      throw new TidemarkError(
        ErrorCodes.toolModule,
        `emit: event type ${type.name} is not offered by this worker's modules (add it to a module's events)`,
      );
    const checked = await checkAgainst(offered.inputSchema, args ?? {});
    if (!checked.ok)
      throw new TidemarkError(
        ErrorCodes.toolModule,
        `emit: arguments of ${type.name} do not match its inputSchema: ${checked.message}`,
      );
    const where = `emit of ${type.name}`;
    const occurrence = {
      eventId: options.eventId ?? `evt_${randomUUID()}`,
      name: offered.name,
      timestamp: (options.timestamp ?? new Date()).toISOString(),
      data: await checkedData(offered, data, where),
    };
    await service.occurrences.append(eventStreamKey(offered.name, checked.value), [occurrence]);
    return { eventId: occurrence.eventId };
  };
}
