import type { GenerationWriter, StreamWriter } from '@tidemark/log';
import {
  ErrorCodes,
  progressOf,
  TidemarkError,
  type GenerationCause,
  type PartitionKey,
  type StreamHead,
  type StreamId,
} from '@tidemark/protocol';
import { whileUnavailable } from './backoff.js';
import { continueProgress } from './progress-continuity.js';

/** What starting generations needs: the writer, and who hears about each execution. */
export interface StreamRunHost {
  writer: StreamWriter;
  onExecution?: ((event: { stream: StreamId; attempt: number; cause: string }) => void) | undefined;
  /** A refused write that will be retried. */
  onWriteFailure?: ((stream: StreamId, error: unknown) => void) | undefined;
  /** The highest progress written by the generations from `previous` on (a takeover continues it). */
  lastProgress?:
    ((session: PartitionKey, previous: StreamHead, until: bigint) => Promise<number>) | undefined;
}

/**
 * The executions of one call's stream, in one place for both lanes: its first (or a takeover after
 * a worker died) started while the log is waited out, each retry as the next generation, and every
 * execution reported as it starts.
 */
export class StreamRun {
  /** What this generation's progress values are continued from. */
  private progressBase = 0;
  /** The highest progress written so far, in any generation of this run. */
  private lastProgress = 0;

  private constructor(
    private readonly host: StreamRunHost,
    readonly session: PartitionKey,
    readonly stream: StreamId,
    /** The generation being written now. */
    public generation: GenerationWriter,
    private cause: GenerationCause,
  ) {}

  /**
   * Starts the stream's next generation after `previous` (none: its first; else a takeover). A log
   * that refuses for a while is waited out with backoff, up to a minute, unless `stopped`.
   */
  static async begin(
    host: StreamRunHost,
    session: PartitionKey,
    stream: StreamId,
    previous: StreamHead | undefined,
    stopped: () => boolean,
    /** The stream's state to keep in its first head (a task's status). */
    snapshot?: unknown,
  ): Promise<StreamRun> {
    const cause: GenerationCause = previous === undefined ? 'first' : 'takeover';
    const { lastProgress } = host;
    // The generations before continued each other's numbering; the one before this may have died
    // before writing any progress, so its head's base counts too.
    const progressBase =
      previous === undefined || lastProgress === undefined
        ? undefined
        : async (startOffset: bigint) =>
            Math.max(
              previous.progressBase ?? 0,
              await lastProgress(session, previous, startOffset),
            );
    const generation = await whileUnavailable(
      () => {
        // A worker whose partition was revoked while it got here must not start anything: the
        // next owner may already run the stream, and a generation begun now would supersede the
        // owner's — then die with this worker, leaving a stream nobody finishes.
        if (stopped()) throw notOwned(stream);
        return host.writer.begin(session, stream, {
          previous,
          cause,
          ...(progressBase === undefined ? {} : { progressBase }),
          ...(snapshot === undefined ? {} : { snapshot }),
        });
      },
      { stopped, onRetry: (error) => host.onWriteFailure?.(stream, error) },
    );
    const run = new StreamRun(host, session, stream, generation, cause);
    run.lastProgress = generation.currentHead.progressBase ?? 0;
    run.progressBase = run.lastProgress;
    return run;
  }

  /**
   * Writes one message of the current generation; resolves once durable. Progress continues the
   * numbering of the generations before (see progress-continuity.ts).
   */
  send(message: unknown): Promise<bigint> {
    const continued = continueProgress(message, this.progressBase);
    this.lastProgress = Math.max(this.lastProgress, progressOf(continued) ?? 0);
    return this.generation.send(continued);
  }

  get attempt(): number {
    return this.generation.generation.attempt;
  }

  /** Reports the execution the current generation starts. */
  reportStart(): void {
    this.host.onExecution?.({ stream: this.stream, attempt: this.attempt, cause: this.cause });
  }

  /** Runs the call again: the next generation (cause `retry`), reported. */
  async retry(): Promise<void> {
    const progressBase = this.lastProgress;
    this.generation = await this.host.writer.begin(this.session, this.stream, {
      previous: this.generation.currentHead,
      cause: 'retry',
      progressBase: () => Promise.resolve(progressBase),
    });
    this.progressBase = this.lastProgress;
    this.cause = 'retry';
    this.reportStart();
  }
}

/** Why a stream was not started: this worker stopped serving its partition. */
export function notOwned(stream: StreamId): TidemarkError {
  return new TidemarkError(
    ErrorCodes.closed,
    `${stream} not started: this worker no longer serves its partition`,
  );
}
