import type { JSONRPCRequest } from '@modelcontextprotocol/server';
import type {
  IdempotencyClaim,
  SessionRecord,
  SessionStore,
  StepJournal,
  StreamHeadStore,
  StreamWriter,
} from '@tidemark/log';
import type { StreamId, TaskMode } from '@tidemark/protocol';
import type { Handoffs } from './handoff.js';
import type { InvocationOptions } from '../execution/index.js';
import type { journaledSteps } from '../execution/index.js';
import type { StreamRunHost } from '../execution/index.js';

/** What a stateless request (and the task it may become) runs with: its own home, so the exchange and the task share it without importing each other. */
export interface StatelessExchangeOptions extends Omit<InvocationOptions, 'tasks'> {
  message: JSONRPCRequest;
  /** The gateway's `--tasks`: whether a `tools/call` may become a task. */
  mode: TaskMode;
  writer: StreamWriter;
  heads: StreamHeadStore;
  /** Waits, before a takeover, for a call its partition's old owner is still finishing. */
  handoffs?: Handoffs | undefined;
  sessions: SessionStore;
  /** Where the calls' durable steps are journaled. */
  steps: StepJournal;
  maxStepBytes: number;
  onStep?: Parameters<typeof journaledSteps>[4]['onStep'];
  taskTtlMs: number;
  taskPollIntervalMs: number;
  maxExecutionsPerCall: number;
  onExecution?: (event: { stream: StreamId; attempt: number; cause: string }) => void;
  /** Where a taken-over stream's progress stopped (its numbering continues). */
  lastProgress?: StreamRunHost['lastProgress'];
  /** Runs a wait for the client (a task's input) without holding a call slot. */
  idle?: <T>(waiting: Promise<T>) => Promise<T>;
  /** The request became a task: from a call slot to a task slot (see `Call.asTask`). */
  asTask?: () => Promise<void>;
  /**
   * A keyed call's claim (an idempotency key): written while it runs, in the log before its
   * answer; with the key's record as it was read to decide it (none: undefined).
   */
  claim?: (IdempotencyClaim & { readonly record?: SessionRecord | null | undefined }) | undefined;
}
