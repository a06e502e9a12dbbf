/**
 * @tidemark/protocol — what every Tidemark process agrees on, byte for byte: the ids and their
 * keys, the records in the log, the resume decision, the wire. It depends on nothing but Node;
 * every other package depends on it. One section per folder, in floor order: a folder imports only
 * from the ones above it.
 */

// The ground floor: typed errors and option checks, the byte codec, one backoff.
export {
  ErrorCodes,
  TidemarkError,
  invalidOption,
  isTidemarkError,
  messageOf,
  positiveInteger,
  httpUrlOption,
  positiveIntegers,
} from './errors.js';
export type { ErrorCode, TidemarkErrorOptions } from './errors.js';
export { backoffMs } from './backoff.js';
export type { BackoffOptions } from './backoff.js';

// wire/ — what crosses HTTP: JSON-RPC codes, protocol revisions, `_meta` keys.
export { MetaKeys } from './wire/meta-keys.js';
export { progressOf, JsonRpcErrorCodes } from './wire/wire.js';
export {
  agreedSessionVersion,
  DEFAULT_SESSION_PROTOCOL_VERSION,
  DEFAULT_TOPIC_PREFIX,
  PRIMING_PROTOCOL_VERSION,
  SESSION_PROTOCOL_VERSIONS,
  STATELESS_PROTOCOL_VERSION,
  isStatelessRevision,
} from './wire/revisions.js';

// keys/ — the secrets every replica shares: the keyring, keyed tokens, request seals, sealed secrets.
export { EVENT_ID_VERSION, createKeyring } from './keys/keyring.js';
export { keyringFromSecrets } from './keys/secret-keyring.js';
export {
  SEAL_HEADER,
  SEAL_WINDOW_MS,
  SEALED_AT_HEADER,
  checkRequestSeal,
  checkSealedRecord,
  sealRequestHeaders,
  sealRequestRecord,
} from './keys/request-seal.js';
export type { ReadRequestRecord, SealCheck } from './keys/request-seal.js';
export type { SealedParts } from './keys/request-seal.js';
export type { EventIdVersion, Keyring, KeyringOptions, SigningKey } from './keys/keyring.js';
export { openSecret, sealSecret } from './keys/sealed-secret.js';
export {
  MAX_SIGNAL_TOKEN_LENGTH,
  RESERVED_STEP_PREFIX,
  SIGNAL_METHOD,
  SignalErrorCodes,
  WAKE_METHOD,
  mintSignalToken,
  signalAnswerStep,
  verifySignalToken,
} from './keys/signal-token.js';
export type { SignalClaim, SignalTokenProblem } from './keys/signal-token.js';

// ids/ — the names: sessions, streams, worker epochs, generations, event ids, partition keys.
export {
  STANDALONE_STREAM,
  TASK_STREAM,
  asRoutingKey,
  asSessionId,
  newRoutingKey,
  newSessionId,
  newWorkerEpoch,
  parsePartitionKey,
  parseRoutingKey,
  parseSessionId,
  parseTaskId,
  parseStreamId,
  parseWorkerEpoch,
  requestStreamId,
  routingKeyOfTask,
} from './ids/ids.js';
export type {
  PartitionKey,
  RequestId,
  RoutingKey,
  SessionId,
  StreamId,
  TaskId,
  WorkerEpoch,
} from './ids/ids.js';
export {
  formatGeneration,
  isValidAttempt,
  nextGeneration,
  parseGeneration,
  sameGeneration,
} from './ids/generation.js';
export type { Generation, GenerationCause } from './ids/generation.js';
export { MAX_EVENT_ID_LENGTH, encodeEventId, logIdOf, verifyEventId } from './ids/event-id.js';
export { eventIdMinter } from './ids/event-id-minter.js';
export { keyInPartitions, keyOnPartition, partitionTag } from './ids/partition-keys.js';
export type {
  EventClaim,
  EventIdProblem,
  EventIdVerification,
  EventPosition,
  LogIdentity,
  StreamIdentity,
  VerifyOptions,
} from './ids/event-id.js';

// records/ — the log's records: stamps, parts, stream heads, requests, idempotency, the log port.
export {
  STAMP_VERSION,
  StampHeaders,
  decodeStamp,
  encodeStamp,
  readStampedRecord,
  readStampedFrame,
  JsonText,
} from './records/record.js';
export type { RecordKind, RecordStamp, StampDecoding, StampedRecord } from './records/record.js';
export { joinParts, PART_HEADER, PARTS_HEADER, splitRecord } from './records/record-parts.js';
export type { PartedRecord, RawFetch } from './records/record-parts.js';
export { foldStreamHead } from './records/stream-head.js';
export {
  argumentsDigest,
  auditKey,
  decodeAuditRecord,
  encodeAuditRecord,
} from './records/audit-record.js';
export type { AuditOutcome, AuditRecord } from './records/audit-record.js';
export type { FoldEffect, FoldResult, StreamHead, TerminalRecord } from './records/stream-head.js';
export {
  TOPIC_CLEANUP,
  TOPIC_ROLES,
  partitionForSession,
  partitionOfRecordKey,
  topicNames,
} from './records/log-port.js';
export type {
  AppendRecord,
  FetchOptions,
  FetchResult,
  GroupMembership,
  GroupPort,
  JoinGroupOptions,
  LogPort,
  LogRecord,
  PartitionOffsets,
  TopicNames,
  TopicRole,
} from './records/log-port.js';
export {
  HEAD_FORMAT_VERSION,
  HEAD_STATE_HEADER,
  decodeStreamHead,
  encodeStreamHead,
  sessionOfHeadKey,
  streamHeadKey,
  headKeyOfStep,
  parseStepKey,
  stepKey,
  stepKeyPrefix,
} from './records/head-codec.js';
export {
  CLASSIFICATION_HEADER,
  CONTROL_HEADER,
  CONTROL_METHOD,
  REQUEST_RECORD_VERSION,
  REQUEST_RECORD_VERSION_HEADER,
  SESSION_ENDED,
  SESSION_ENDED_METHOD,
  SESSION_TOUCHED,
  SHARE_HEADER,
  SUBJECT_HEADER,
  decodeRequestRecord,
  encodeRequestRecord,
} from './records/request-records.js';
export type {
  Caller,
  EncodedRequestRecord,
  RequestMessage,
  RequestRecord,
  RequestRecordDecoding,
  SessionControl,
} from './records/request-records.js';
export { answerInBody, statelessRequest } from './records/stateless-envelope.js';
export { TASK_MODES } from './records/request-records.js';
export type { TaskMode } from './records/request-records.js';
export {
  IDEMPOTENCY_KEY_GONE,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_META_KEY,
  callFingerprint,
  idempotencyKeyGone,
  idempotencyKeyReused,
  idempotentRoutingKey,
  readIdempotencyKey,
} from './records/idempotency.js';
export type { IdempotencyKeyReading } from './records/idempotency.js';

// resume/ — the product: the resume decision, the cursor that walks a stream, the reset notice.
export { StreamCursor } from './resume/stream-cursor.js';
export type {
  CursorStep,
  ResetReason,
  SkipReason,
  StreamCursorOptions,
} from './resume/stream-cursor.js';
export { decideResume } from './resume/resume.js';
export type {
  InvalidReason,
  ReplayPlan,
  ResumeDecision,
  ResumeInput,
  ResumeReason,
  StreamEnd,
} from './resume/resume.js';
export { RESET_NOTIFICATION_METHOD, resetNotification } from './resume/reset-notice.js';
export type { ResetNotification } from './resume/reset-notice.js';

// tasks/ — the Tasks extension: task states, their fold, the `tasks/stream` records.
export {
  CLIENT_CAPABILITIES_META_KEY,
  MISSING_REQUIRED_CLIENT_CAPABILITY,
  TASKS_EXTENSION,
  TASK_SUPPORTS,
  createTaskResult,
  createdTask,
  declaresTasks,
  detailedTask,
  foldTask,
  isTaskExpired,
  isTerminalTaskStatus,
  missingTasksCapability,
  taskDecision,
} from './tasks/tasks.js';
export {
  TASK_ANSWERED_METHOD,
  TASK_CANCEL_METHOD,
  TASK_CANCELLED_METHOD,
  TASK_EVENT_NOTIFICATION,
  TASK_INPUT_METHOD,
  TASK_STREAM_METHOD,
  TASK_UPDATE_METHOD,
  taskEventOf,
  taskSnapshotOf,
} from './tasks/task-records.js';
export type { TaskStreamRecord } from './tasks/task-records.js';
export type {
  TaskEvent,
  TaskFold,
  TaskFoldSkip,
  TaskState,
  TaskStatus,
  TaskSupport,
} from './tasks/tasks.js';

// events/ — the Events extension: occurrences, event streams, webhook deliveries, cursors.
export {
  EVENT_DELIVERIES,
  EVENTS_EXTENSION,
  EventMethods,
  EventNotifications,
  MAX_WEBHOOK_BODY_BYTES,
  SUBSCRIPTION_ID_HEADER,
} from './events/events.js';
export type {
  EventDelivery,
  EventOccurrence,
  EventTypeDescriptor,
  WebhookControl,
} from './events/events.js';
export { canonicalJson, eventStreamKey, subscriptionIdOf } from './events/event-streams.js';
export type { SubscriptionIdentity } from './events/event-streams.js';
export {
  EVENT_CURSOR_VERSION,
  encodeEventCursor,
  verifyEventCursor,
} from './events/event-cursor.js';
export type {
  EventCursorClaim,
  EventCursorPosition,
  EventCursorProblem,
  EventCursorVerification,
} from './events/event-cursor.js';
