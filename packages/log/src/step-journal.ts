import {
  HEAD_STATE_HEADER,
  parseStepKey,
  signalAnswerStep,
  stepKey,
  stepKeyPrefix,
  type PartitionKey,
  type StreamId,
} from '@tidemark/protocol';
import { KeyedTable } from './keyed-table.js';
import type { StoreOptions } from './stores.js';
import type { StreamHeadStore } from './stores.js';

/** What a step's function did: its value (JSON), or the error it threw. */
export type StepOutcome =
  | { readonly ok: true; readonly value?: unknown }
  | {
      readonly ok: false;
      readonly error: {
        readonly name: string;
        readonly message: string;
        readonly code?: unknown;
        readonly data?: unknown;
      };
    };

/** One journaled step of a call: its outcome and which execution ran it. */
export interface JournaledStep {
  readonly outcome: StepOutcome;
  /** The execution (generation) that ran the function, as `epoch.attempt`. */
  readonly generation: string;
  readonly atMs: number;
  readonly durationMs: number;
  /** The tries the outcome took, when its retry policy tried it more than once. */
  readonly attempts?: number;
  /** Its place among its execution's steps (1, 2, …): what a replay checks its code against. */
  readonly index?: number;
  /** The version of the module whose code ran it (`defineToolModule({ version })`). */
  readonly version?: string;
}

/**
 * A step between two tries (its retry policy): the tries so far, the last one's error, and when
 * the next is due — so whichever worker runs the call next goes on counting, and waits only what
 * is left. Its outcome, once there is one, replaces it.
 */
export interface RetryingStep {
  readonly retrying: {
    readonly attempts: number;
    readonly nextAtMs: number;
    readonly error: Extract<StepOutcome, { ok: false }>['error'];
  };
  readonly generation: string;
  readonly atMs: number;
  readonly index?: number;
  readonly version?: string;
}

/** What the journal holds for a step: its outcome, or its retries so far. */
export type StepRecord = JournaledStep | RetryingStep;

/** Whether a step's record is its outcome (rather than its retries so far). */
export function isStepOutcome(record: StepRecord): record is JournaledStep {
  return 'outcome' in record;
}

/** Version of the stored step format. */
const STEP_FORMAT_VERSION = 1;

/** The value of `HEAD_STATE_HEADER` on a step record: a sweep reads it without decoding. */
const STEP_RECORD_STATE = 'step';

/**
 * The journal of durable steps (`currentExecution().step`): each step's outcome a record of the
 * compacted `streams` topic, keyed beside its call's head, in the partition of its session. A later
 * execution of the same call — a retry, a takeover after a kill -9 — reads it instead of running
 * the step again. Read-your-writes across replicas, like every table: `get` first catches up.
 * Expired with the call (housekeeping: when its head goes, or its session).
 */
export class StepJournal extends KeyedTable<StepRecord> {
  constructor(options: StoreOptions) {
    super(options.partitionCount, {
      port: options.port,
      topic: options.topics.streams,
      decode: decodeStep,
      encode: (step) => Buffer.from(JSON.stringify({ step: STEP_FORMAT_VERSION, ...step })),
      headers: () => [[HEAD_STATE_HEADER, STEP_RECORD_STATE]],
      ...(options.cacheEntries === undefined ? {} : { cacheEntries: options.cacheEntries }),
    });
  }

  /** Bytes a step's record takes in the log (what the worker's size cap is checked against). */
  static encodedSize(step: StepRecord): number {
    return Buffer.byteLength(JSON.stringify({ step: STEP_FORMAT_VERSION, ...step }));
  }

  get(session: PartitionKey, stream: StreamId, step: string): Promise<StepRecord | undefined> {
    return this.table.get(this.partitionOf(session), stepKey(session, stream, step));
  }

  /** Journals a step; resolves once it is durable. */
  put(session: PartitionKey, stream: StreamId, step: string, value: StepRecord): Promise<void> {
    return this.table.put(this.partitionOf(session), stepKey(session, stream, step), value);
  }

  /** The keys of a partition's records (heads and steps), caught up to the log's end of now. */
  async keys(partition: number): Promise<string[]> {
    await this.table.catchUp(partition);
    return [...this.table.entries(partition)].map(([key]) => key);
  }

  /** Every journaled step of a call, in the order they were written (for the console). */
  async list(
    session: PartitionKey,
    stream: StreamId,
  ): Promise<Array<{ step: string } & StepRecord>> {
    const partition = this.partitionOf(session);
    await this.table.catchUp(partition);
    const prefix = stepKeyPrefix(session, stream);
    const keys = [...this.table.entries(partition)]
      .map(([key]) => key)
      .filter((key) => key.startsWith(prefix));
    const steps: Array<{ step: string } & StepRecord> = [];
    for (const key of keys) {
      const step = decodeURIComponent(key.slice(prefix.length));
      const value = await this.table.get(partition, key);
      if (value !== undefined) steps.push({ step, ...value });
    }
    return steps;
  }
}

/** A call resting in its journal: asleep until a time, or waiting for a signal's answer. */
export interface WaitingStep {
  /** The call's owner key (its session, routing key or task id) and journal stream. */
  readonly owner: PartitionKey;
  readonly journal: StreamId;
  readonly kind: 'sleep' | 'signal';
  /** The sleep's or signal's name. */
  readonly name: string;
  /** When the sleep ends, or the signal expires (none: never). */
  readonly untilMs: number | undefined;
  /** When the call got there. */
  readonly sinceMs: number;
}

/**
 * The sleeps not over and the signals not answered in one partition's journals, as the log holds
 * them now: what an operator lists (`tidemark calls list`, the console). A call that finished
 * without waiting for a signal it asked for is listed too: its caller checks the call's head.
 */
async function waitingSteps(
  journal: StepJournal,
  partition: number,
  nowMs: number,
): Promise<WaitingStep[]> {
  const asked: Array<{ key: string; owner: PartitionKey; journal: StreamId; step: string }> = [];
  const answered = new Set<string>();
  for (const key of await journal.keys(partition)) {
    const parsed = parseStepKey(key);
    if (parsed === undefined) continue;
    const { session: owner, stream, step } = parsed;
    if (step.startsWith('sleep ') || step.startsWith('signal '))
      asked.push({ key, owner, journal: stream, step });
    else if (step.startsWith(signalAnswerStep('')))
      answered.add(`${owner}/${stream}/${step.slice(signalAnswerStep('').length)}`);
  }
  const waiting: WaitingStep[] = [];
  for (const { owner, journal: stream, step } of asked) {
    const record = await journal.get(owner, stream, step);
    if (record === undefined || !isStepOutcome(record) || !record.outcome.ok) continue;
    const sleep = step.startsWith('sleep ');
    const name = step.slice(sleep ? 'sleep '.length : 'signal '.length);
    const value = record.outcome.value;
    const base = { owner, journal: stream, name, sinceMs: record.atMs };
    if (sleep && typeof value === 'number' && value > nowMs)
      waiting.push({ ...base, kind: 'sleep', untilMs: value });
    if (!sleep && !answered.has(`${owner}/${stream}/${name}`)) {
      const { expiresAtMs } = (value ?? {}) as { expiresAtMs?: number };
      waiting.push({ ...base, kind: 'signal', untilMs: expiresAtMs });
    }
  }
  return waiting;
}

/**
 * Every call resting in the log now — `waitingSteps` of every partition, without the calls whose
 * stream has ended — soonest first (`tidemark calls list`).
 */
export async function restingCalls(
  journal: StepJournal,
  heads: StreamHeadStore,
  partitionCount: number,
  nowMs: number,
): Promise<WaitingStep[]> {
  const found: WaitingStep[] = [];
  for (let partition = 0; partition < partitionCount; partition++)
    for (const waiting of await waitingSteps(journal, partition, nowMs)) {
      const head = await heads.get(waiting.owner, waiting.journal);
      if (head?.terminal === undefined) found.push(waiting);
    }
  return found.sort((a, b) => (a.untilMs ?? Infinity) - (b.untilMs ?? Infinity));
}

function decodeStep(value: Uint8Array): StepRecord | undefined {
  try {
    const stored = JSON.parse(Buffer.from(value).toString()) as Partial<JournaledStep> &
      Partial<RetryingStep> & { step?: unknown };
    if (
      stored.step !== STEP_FORMAT_VERSION ||
      typeof stored.generation !== 'string' ||
      typeof stored.atMs !== 'number'
    )
      return undefined;
    const { generation, atMs, retrying, outcome } = stored;
    const placed = {
      ...(typeof stored.index === 'number' ? { index: stored.index } : {}),
      ...(typeof stored.version === 'string' ? { version: stored.version } : {}),
    };
    if (typeof retrying === 'object' && retrying !== null)
      return typeof retrying.attempts === 'number' &&
        typeof retrying.nextAtMs === 'number' &&
        typeof retrying.error === 'object'
        ? { retrying, generation, atMs, ...placed }
        : undefined;
    if (
      typeof outcome !== 'object' ||
      outcome === null ||
      typeof outcome.ok !== 'boolean' ||
      typeof stored.durationMs !== 'number'
    )
      return undefined;
    const { durationMs, attempts } = stored;
    return {
      outcome,
      generation,
      atMs,
      durationMs,
      ...(typeof attempts === 'number' ? { attempts } : {}),
      ...placed,
    };
  } catch {
    return undefined;
  }
}
