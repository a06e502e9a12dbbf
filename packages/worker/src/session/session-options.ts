import type { StepJournal, StreamHeadStore, StreamWriter } from '@tidemark/log';
import type { SessionId, StreamId } from '@tidemark/protocol';
import type { ToolLogger, ToolModule } from '@tidemark/tools';
import type { EventService } from '../events/index.js';
import type { ExecutionEnd } from '../execution/index.js';
import type { journaledSteps } from '../execution/index.js';
import type { StreamRunHost } from '../execution/index.js';

/** What one session on a worker is given: its modules, where it writes, its bounds and hooks. */
export interface SessionRuntimeOptions {
  session: SessionId;
  /** The authenticated subject the session is bound to, if any. */
  subject?: string | undefined;
  modules: readonly ToolModule[];
  /** The Events extension, when the modules offer event types. */
  events?: EventService | undefined;
  serverInfo: { name: string; version: string };
  instructions?: string | undefined;
  writer: StreamWriter;
  heads: StreamHeadStore;
  /** Where the calls' durable steps are journaled. */
  steps: StepJournal;
  maxStepBytes: number;
  onStep?: Parameters<typeof journaledSteps>[4]['onStep'];
  /** Calls of this session running at once; more are answered with an error at once. */
  maxConcurrentCalls: number;
  /**
   * Executions of one call (retries, takeovers after a worker died) before it is answered with an
   * error instead of run again: a request that kills every worker that runs it must not do so
   * forever.
   */
  maxExecutionsPerCall: number;
  /** A write of a call's stream failed; it is written again as a new generation. */
  onWriteFailure?: (stream: StreamId, error: unknown) => void;
  /** Where a taken-over stream's progress stopped (its numbering continues). */
  lastProgress?: StreamRunHost['lastProgress'];
  /** Each tool execution's end. */
  onExecutionEnd?: ((end: ExecutionEnd) => void) | undefined;
  /** The logger tools get. */
  logger?: ToolLogger | undefined;
  /** Observability hooks: executions started (per generation) and skipped. */
  onExecution?: (event: { stream: StreamId; attempt: number; cause: string }) => void;
}
