/**
 * events/ — the Events extension on a worker, the lowest room: it knows nothing of calls.
 *
 * `EventService` owns the event types the modules offer and the log they are served from
 * (occurrences, the registry of leases and subscriptions). `attachEventMethods` puts the
 * `events/*` and webhook methods on a tool server, checking each request's stream first
 * (`event-stream-params.ts`). `EventSources` runs the sources of the streams in the partitions
 * this worker owns, and their webhook deliveries. `emitterOf` is what a tool's `emit` writes
 * through. `sourceOccurrences` runs one source with no log (what `@tidemark/testing` drives).
 */
export { emitterOf } from './event-emit.js';
export type { EmitterFor } from './event-emit.js';
export { attachEventMethods } from './event-methods.js';
export { EventService } from './event-service.js';
export { sourceOccurrences } from './event-source-run.js';
export type { RecordedOccurrence } from './event-source-run.js';
export { EventSources } from './event-sources.js';
