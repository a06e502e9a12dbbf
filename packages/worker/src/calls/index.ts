/**
 * calls/ — a call on a worker, on any lane.
 *
 * `Call` owns one call's slot, span and offset and how it ended. `CallSlots` and `Admission` own
 * the worker's slots, shared fairly per subject. `PartitionReader` reads a partition's requests
 * in order and commits behind the calls. `Handoffs` own a partition changing hands, `Housekeeping`
 * what expires. `LaneContext` is what every lane shares: the stores, the options, the
 * `CallEnvironment` every execution runs in, the answers. `StatelessRequest` is a stateless
 * request as its lane hands it on.
 * `SealedRecords` and `answerUnreadable` turn away records that fail their seal or cannot be read.
 */
export { Admission, admissionOf } from './admission.js';
export { CallSlots, slotNotes, slotShareOf } from './call-slots.js';
export type { SlotKind, SlotOccupancy } from './call-slots.js';
export { Call } from './call.js';
export type { StatelessRequest } from './stateless-request.js';
export { Handoffs, settledHead } from './handoff.js';
export { Housekeeping } from './housekeeping.js';
export {
  INTERNAL_ERROR,
  JOIN_FAILED,
  answerFailure,
  answerRequest,
  callEnvironment,
} from './lane-context.js';
export type { LaneContext, WorkerStores } from './lane-context.js';
export { PartitionReader } from './partition-reader.js';
export { SealedRecords } from './sealed-records.js';
export { answerUnreadable } from './unreadable-records.js';
