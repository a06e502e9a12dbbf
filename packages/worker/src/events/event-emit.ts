import { randomUUID } from 'node:crypto';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import type { StoredOccurrence } from '@tidemark/log';
import { checkAgainst, type EmitFunction, type EventType } from '@tidemark/tools';
import { checkedData } from './event-source-run.js';
import { streamKeyOf } from './event-stream-params.js';

// `currentExecution().emit`: an occurrence from a tool's code, checked against its type and
// appended to its stream's partition from whichever worker runs the tool (only sources need a
// single owner; the log orders the rest). The test harness records them instead.

/** Where an emitted occurrence goes: the log on a worker, a list in the test harness. */
export type EmitSink = (
  stream: string,
  occurrence: StoredOccurrence,
  args: Readonly<Record<string, unknown>>,
) => Promise<unknown>;

/** The emit function a call of `subject` gets (undefined: unauthenticated). */
export type EmitterFor = (subject: string | undefined) => EmitFunction;

/**
 * The emit function tools get, for the event types `types()` offers now: a call emits to the
 * stream of its own subject for a type scoped per subject, to the one stream of a shared type.
 */
export function emitterOf(types: () => ReadonlyMap<string, EventType>, sink: EmitSink): EmitterFor {
  return (subject) =>
    async (type, args, data, options = {}) => {
      const offered = types().get(type.name);
      if (offered === undefined)
        throw new TidemarkError(
          ErrorCodes.toolModule,
          `emit: event type ${type.name} is not offered by the modules served (add it to a module's events)`,
        );
      const checked = await checkAgainst(offered.inputSchema, args ?? {});
      if (!checked.ok)
        throw new TidemarkError(
          ErrorCodes.toolModule,
          `emit: arguments of ${type.name} do not match its inputSchema: ${checked.message}`,
        );
      const occurrence = {
        eventId: options.eventId ?? `evt_${randomUUID()}`,
        name: offered.name,
        timestamp: (options.timestamp ?? new Date()).toISOString(),
        data: await checkedData(offered, data, `emit of ${type.name}`),
      };
      const checkedArgs = checked.value as Record<string, unknown>;
      await sink(streamKeyOf(offered, checkedArgs, subject), occurrence, checkedArgs);
      return { eventId: occurrence.eventId };
    };
}
