import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type {
  RequestWriter,
  SessionStore,
  StepJournal,
  StreamHeadStore,
  StreamWriter,
} from '@tidemark/log';
import {
  JsonRpcErrorCodes,
  requestStreamId,
  type PartitionKey,
  type RequestId,
} from '@tidemark/protocol';
import type { CallSlots } from './call-slots.js';
import type { EventService } from '../events/index.js';
import type { Handoffs } from './handoff.js';
import type { Housekeeping } from './housekeeping.js';
import { lastProgressInLog, SignalDesk, type CallEnvironment } from '../execution/index.js';
import type { CompiledWorkerOptions } from '../worker-options.js';

// What every lane of a started worker shares — the log's stores, the slots, the housekeeping —
// and the answers a lane writes for a request it could not run (a join that failed, an error).

/** The log's stores of a started worker. */
export interface WorkerStores {
  writer: StreamWriter;
  heads: StreamHeadStore;
  sessions: SessionStore;
  steps: StepJournal;
  housekeeping: Housekeeping;
  /** Requests passed on to another partition (a keyed call's session record). */
  requests: RequestWriter;
}

/** What each lane of a started worker shares. */
export interface LaneContext {
  readonly options: CompiledWorkerOptions;
  readonly stores: WorkerStores;
  readonly slots: CallSlots;
  /** The Events extension, when the modules offer event types. */
  readonly events?: EventService | undefined;
  /** Handoffs of partitions between workers (absent in unit-level lanes: never waits). */
  readonly handoffs?: Handoffs | undefined;
  /** What every execution runs with, built once (`callEnvironment`). */
  readonly environment: CallEnvironment;
}

/** The environment every call on a started worker runs in, from its options and stores. */
export function callEnvironment(
  options: CompiledWorkerOptions,
  stores: WorkerStores,
  events: EventService | undefined,
  /** What the worker adds beside the options: its partitions' fences and the audit trail. */
  extras: Pick<CallEnvironment, 'fenced' | 'audit'> = {},
): CallEnvironment {
  const { log, topics, onProblem } = options;
  return {
    ...extras,
    serverInfo: options.serverInfo,
    instructions: options.instructions,
    // Read on each use: `Worker.replaceModules` (dev --watch) swaps them under running sessions.
    get modules() {
      return options.modules;
    },
    events,
    writer: stores.writer,
    heads: stores.heads,
    steps: stores.steps,
    maxStepBytes: options.maxStepBytes,
    signals: new SignalDesk(stores.steps, options.keyring, options.publicUrl),
    sleepInMemoryMs: options.sleepInMemoryMs,
    maxExecutionsPerCall: options.maxExecutionsPerCall,
    onWriteFailure: (owner, stream, error) =>
      onProblem(
        `the log refused a write of ${owner} ${stream}; a step is written again, a result written again as a new generation`,
        error,
      ),
    // A takeover continues the progress numbering where the earlier generations stopped.
    lastProgress: (owner, previous, until) =>
      lastProgressInLog(
        log,
        topics.events,
        stores.heads.partitionOf(owner),
        owner,
        previous,
        until,
      ),
    onExecution: options.onExecution,
    onExecutionEnd: options.onExecutionEnd,
    onStep: options.onStep,
    logger: options.logger,
  };
}

/** The answer to a keyed request whose joined call could not be followed. */
export const JOIN_FAILED: { code: number; message: string } = {
  code: JsonRpcErrorCodes.internalError,
  message: 'Internal error: the keyed call could not be joined',
};

/** The answer to a request the server could not run. */
export const INTERNAL_ERROR: { code: number; message: string } = {
  code: JsonRpcErrorCodes.internalError,
  message: 'Internal error: the server could not run this request',
};

/**
 * A request that failed before its tool could answer it (its session could not start: a tool
 * module's `register` threw; the log refused a write) still gets an answer: a JSON-RPC error as the
 * end of its stream. Every request a worker takes is answered.
 */
export function answerFailure(
  lane: LaneContext,
  session: PartitionKey,
  message: JSONRPCMessage,
  error = INTERNAL_ERROR,
): Promise<void> {
  return answerRequest(lane, session, message, { error });
}

/**
 * Ends a request's stream with an answer of the worker's own (`result` or `error`), unless the
 * stream already ended. A refused write is reported, not thrown.
 */
export async function answerRequest(
  lane: LaneContext,
  session: PartitionKey,
  message: JSONRPCMessage,
  answer: Readonly<Record<string, unknown>>,
): Promise<void> {
  if (!('method' in message) || !('id' in message) || !isRequestId(message.id)) return;
  const { heads, writer } = lane.stores;
  const stream = requestStreamId(message.id);
  try {
    const previous = await heads.decided(session, stream);
    if (previous?.terminal !== undefined) return;
    const generation = await writer.begin(session, stream, { previous });
    await generation.finish({ jsonrpc: '2.0', id: message.id, ...answer });
  } catch (failure) {
    lane.options.onProblem(`answering the request ${String(message.id)} of ${session}`, failure);
  }
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}
