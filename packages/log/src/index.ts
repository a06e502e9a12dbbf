export { PARTITION_TAIL_DEFAULTS, PartitionTail } from './partition-tail.js';
export type { PartitionTailOptions, Subscription, TailListener } from './partition-tail.js';
export { AppendQueue } from './append-queue.js';
export { GenerationWriter, StreamWriter } from './stream-writer.js';
export type { BeginOptions, StreamWriterOptions } from './stream-writer.js';
export { COMPACTED_TABLE_DEFAULTS, CompactedTable } from './compacted-table.js';
export type { CompactedTableOptions, TableEntry } from './compacted-table.js';
export { SessionStore, StreamHeadStore, TERMINAL_HEAD, type TracedStreamHead } from './stores.js';
export type {
  IdempotencyClaim,
  SessionRecord,
  SessionStoreOptions,
  StoreOptions,
} from './stores.js';
export { StepJournal } from './step-journal.js';
export { RequestWriter } from './request-writer.js';
export type { PassedHeader, RequestWriterOptions } from './request-writer.js';
export { HandoffNotices, type HandoffNotice } from './handoff-notices.js';
export { isEvicted, readRange } from './range-read.js';
export { finalMessage } from './final-message.js';
export { fitMessage } from './message-size.js';
export type { FittedMessage, MessageLimits } from './message-size.js';
export { lastPositionAfter, OccurrenceLog } from './occurrence-log.js';
export { AuditLog } from './audit-log.js';
export type { AuditLogOptions, AuditQuery } from './audit-log.js';
export { EventRegistry, RECENT_DELIVERIES } from './event-registry.js';
export { TaskEventNumbering } from './task-events.js';
export type { TaskStreamEvent } from './task-events.js';
export type {
  DeliveryState,
  DeliveryStatus,
  EventRegistryOptions,
  RecentDelivery,
  SourceHead,
  StreamLease,
  WebhookSubscription,
} from './event-registry.js';
export type {
  OccurrenceLogOptions,
  OccurrencePage,
  PollAnswer,
  PollRequest,
  StoredOccurrence,
} from './occurrence-log.js';
export type { RangeReadOptions } from './range-read.js';
export { isStepOutcome, restingCalls } from './step-journal.js';
export type {
  JournaledStep,
  RetryingStep,
  StepOutcome,
  StepRecord,
  WaitingStep,
} from './step-journal.js';
export { checkPartitionPlacement, partitionPlacementProblems } from './partition-placement.js';
