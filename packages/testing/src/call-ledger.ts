import type { RequestId, WorkerEpoch } from '@tidemark/protocol';
import type { StepRecord, StoredOccurrence } from '@tidemark/log';
import type { Execution, StepReport, ToolModule } from '@tidemark/tools';
import {
  CallSteps,
  emitterOf,
  levelName,
  lineLogger,
  stepFetch,
  withCompensations,
  WORKER_DEFAULTS,
  type EmitterFor,
  type ExecutionEnd,
  type SignalHost,
  type ToolLogLine,
} from '@tidemark/worker/harness';
import { harnessSignals, type SignalAnswerer } from './signals.js';

/** An occurrence a tool emitted, as the harness recorded it. */
export interface EmittedOccurrence extends StoredOccurrence {
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** The executions of the calls of one test session: attempts per call, and how each ended. */
export class CallLedger {
  private readonly attempts = new Map<RequestId, number>();
  private readonly epoch = '0'.repeat(20) as WorkerEpoch;
  readonly ends: Array<Pick<ExecutionEnd, 'outcome' | 'error'> & { attempt: number }> = [];
  readonly lines: ToolLogLine[] = [];
  readonly steps: Array<StepReport & { attempt: number }> = [];
  readonly emitted: EmittedOccurrence[] = [];
  /** Each call's steps, journaled in memory as a worker journals them in the log. */
  private readonly journals = new Map<RequestId, CallSteps>();
  private readonly records = new Map<RequestId, Map<string, StepRecord>>();
  /** The tools' logger (`currentExecution().log`), captured instead of written to stderr. */
  readonly logger = lineLogger(({ level, time: _time, ...fields }) =>
    this.lines.push({
      ...fields,
      level: levelName(level),
      msg: fields['msg'] as string | undefined,
    }),
  );

  /** Emits as a worker would — checked against the module's event types — into `emitted`. */
  readonly emitAs: EmitterFor;

  constructor(
    module: ToolModule,
    /** `ToolSessionOptions.skipWaits` and `.signals`. */
    private readonly options: { skipWaits?: boolean; signals?: SignalAnswerer | undefined },
  ) {
    const types = new Map((module.events ?? []).map((type) => [type.name, type]));
    this.emitAs = emitterOf(
      () => types,
      (_stream, occurrence, args) =>
        Promise.resolve(void this.emitted.push({ ...occurrence, arguments: args })),
    );
  }

  execution(requestId: RequestId): Execution {
    const attempt = this.attempts.get(requestId) ?? 1;
    this.attempts.set(requestId, attempt);
    return withCompensations({
      sessionId: 'test-session',
      stream: String(requestId),
      generation: { epoch: this.epoch, attempt },
      attempt,
      ...this.stepsOf(requestId).forExecution(
        `${this.epoch}.${attempt}`,
        undefined,
        this.signalsOf(requestId),
      ),
      fetch: stepFetch,
    });
  }

  private signalsOf(requestId: RequestId): SignalHost {
    this.stepsOf(requestId);
    return harnessSignals(this.records.get(requestId)!, this.options.signals);
  }

  private stepsOf(requestId: RequestId): CallSteps {
    let steps = this.journals.get(requestId);
    if (steps !== undefined) return steps;
    const journal = new Map<string, StepRecord>();
    this.records.set(requestId, journal);
    steps = new CallSteps({
      store: {
        get: (step) => Promise.resolve(journal.get(step)),
        put: (step, value) => Promise.resolve(void journal.set(step, value)),
        list: () => Promise.resolve([...journal].map(([step, record]) => ({ step, ...record }))),
      },
      callId: `test-session/${String(requestId)}`,
      replay: true,
      maxStepBytes: WORKER_DEFAULTS.maxStepBytes,
      ...(this.options.skipWaits === true ? { sleep: () => Promise.resolve() } : {}),
      onStep: (event) => this.steps.push({ ...event, attempt: this.attempts.get(requestId) ?? 1 }),
    });
    this.journals.set(requestId, steps);
    return steps;
  }

  retry(requestId: RequestId): Promise<void> {
    this.attempts.set(requestId, (this.attempts.get(requestId) ?? 1) + 1);
    return Promise.resolve();
  }

  onExecutionEnd(end: ExecutionEnd): void {
    this.ends.push({
      attempt: end.execution?.attempt ?? 1,
      outcome: end.outcome,
      ...(end.error === undefined ? {} : { error: end.error }),
    });
  }
}
