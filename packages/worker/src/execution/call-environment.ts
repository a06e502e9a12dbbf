import type { StepJournal, StreamHeadStore, StreamWriter } from '@tidemark/log';
import type { AuditRecord, PartitionKey, StreamHead, StreamId } from '@tidemark/protocol';
import type { ToolLogger, ToolModule } from '@tidemark/tools';
import type { EventService } from '../events/index.js';
import type { ExecutionEnd } from './retries.js';
import type { SignalDesk } from './signal-desk.js';
import type { CallStepReport } from './journaled-steps.js';
import type { ServerIdentity } from './tool-server.js';

/**
 * What every execution on a worker runs with, whatever its lane: the modules and the server's
 * identity, the log's stores it writes to, the bounds, and who hears of it. The worker builds it
 * once when it starts (`callEnvironment` in calls/); a lane hands a call its request and this —
 * never an option bag of its own.
 */
export interface CallEnvironment extends ServerIdentity {
  readonly modules: readonly ToolModule[];
  /** The Events extension, when the modules offer event types. */
  readonly events?: EventService | undefined;
  readonly writer: StreamWriter;
  readonly heads: StreamHeadStore;
  /** Where the calls' durable steps are journaled. */
  readonly steps: StepJournal;
  readonly maxStepBytes: number;
  /** The calls' signals (`ex.signal`): minted, answered once, and what wakes a resting call. */
  readonly signals: SignalDesk;
  /** A task's sleep this long or longer leaves memory (`WorkerOptions.sleepInMemoryMs`). */
  readonly sleepInMemoryMs: number;
  /**
   * Executions of one call (retries, takeovers after a worker died) before it is answered with an
   * error instead of run again: a request that kills every worker that runs it must not do so
   * forever.
   */
  readonly maxExecutionsPerCall: number;
  /** A write the log refused, written again (a step, or a call's final message as a new generation). */
  readonly onWriteFailure?:
    ((owner: PartitionKey, stream: StreamId, error: unknown) => void) | undefined;
  /** Where a taken-over stream's progress stopped (its numbering continues). */
  readonly lastProgress?:
    ((owner: PartitionKey, previous: StreamHead, until: bigint) => Promise<number>) | undefined;
  /** Each execution as it starts (its first, a retry, a takeover). */
  readonly onExecution?: ((start: ExecutionStart) => void) | undefined;
  /** Each tool execution's end. */
  readonly onExecutionEnd?: ((end: ExecutionEnd) => void) | undefined;
  /** Each durable step run or replayed. */
  readonly onStep?: ((step: CallStepReport) => void) | undefined;
  /** The logger tools get. */
  readonly logger?: ToolLogger | undefined;
  /**
   * Whether this worker lost the partition of `owner`'s calls with no handoff notice in the log
   * (cut off from the group past its session timeout): the next owner runs them again without
   * waiting, so a step taken here now would be taken twice — its effect on the world too. Such a
   * call's next step waits until the call is stopped (its partition dropped) instead.
   */
  readonly fenced?: ((owner: PartitionKey) => boolean) | undefined;
  /** Writes a call's audit record (the `audit` topic, an OpenTelemetry log record); resolves once durable. */
  readonly audit?: ((record: AuditRecord) => Promise<void>) | undefined;
}

/** One execution of a call started: its first, a retry, or a takeover after a worker died. */
export interface ExecutionStart {
  /** The key of the call's session, or of its stateless request. */
  readonly session: PartitionKey;
  readonly stream: StreamId;
  readonly attempt: number;
  readonly cause: string;
}

/** How an execution begins, beyond whose it is. */
export interface BeginOptions {
  /** This worker stopped serving the call's partition: nothing may start (or be written again). */
  readonly stopped: () => boolean;
  /** The stream's state to keep in its first head (a task's status). */
  readonly snapshot?: unknown;
  /** The stream whose step journal the call uses (default its own: a keyed call's first stream). */
  readonly journal?: StreamId | undefined;
  /** Look steps up in the journal even on a first generation (another stream's execution wrote it). */
  readonly replay?: boolean | undefined;
  /**
   * The highest progress the previous generation wrote, when this process knows it (a task woken
   * from a sleep): then the log is not read for it.
   */
  readonly progress?: number | undefined;
}
