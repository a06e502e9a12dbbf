import { isStepOutcome, type JournaledStep, type StepJournal } from '@tidemark/log';
import {
  invalidOption,
  mintSignalToken,
  signalAnswerStep,
  type Keyring,
  type PartitionKey,
  type StreamId,
} from '@tidemark/protocol';
import { answerRecord, type JournaledAnswer, type SignalHost } from './signal.js';
import { untilWake } from './sleep.js';

/** Rings that found no call resting, kept for the call about to rest (bounded: oldest go). */
const MAX_RUNG = 10_000;

/**
 * The worker's signals: it mints their URLs, settles each one's answer once (the first of a POST
 * and its expiry wins — in order here, the one process that owns the call's partition), and wakes
 * a call resting on this worker when its answer comes in before its time.
 */
export class SignalDesk {
  /** Calls resting here (a sleep, a signal's wait), by `restKey`: what wakes each early. */
  private readonly resting = new Map<string, () => void>();
  /** Answers that came in while their call was not resting (still running, or about to rest). */
  private readonly rung = new Set<string>();
  /** The settling of each signal now: the next waits for it. */
  private readonly settling = new Map<string, Promise<unknown>>();

  constructor(
    private readonly steps: StepJournal,
    private readonly keyring: Keyring | undefined,
    /** The MCP endpoint as clients reach it (`WorkerOptions.publicUrl`): signal URLs start with it. */
    private readonly publicUrl: string,
  ) {}

  /** The signals of one call (its owner key and journal stream). */
  host(owner: PartitionKey, journal: StreamId): SignalHost {
    return {
      mint: (name, expiresAtMs) => {
        if (this.keyring === undefined)
          throw invalidOption(
            'signal',
            "a worker with the gateways' keyring (it signs signal URLs: `--event-id-secret`)",
            'none',
          );
        const token = mintSignalToken(this.keyring, { owner, journal, name, expiresAtMs });
        return `${this.publicUrl}/signals/${token}`;
      },
      answered: (name) => this.answerOf(owner, journal, name),
      expire: (name) =>
        this.settle(owner, journal, name, async (answered) => {
          if (answered !== undefined) return answered;
          const expired = answerRecord('expired', Date.now());
          await this.steps.put(owner, journal, signalAnswerStep(name), expired);
          return expired;
        }),
    };
  }

  /**
   * Journals `answer` as the signal's answer unless it has one: what is journaled now (the first
   * answer, or its expiry). A new answer wakes the call if it rests here.
   */
  async answer(
    owner: PartitionKey,
    journal: StreamId,
    name: string,
    answer: JournaledAnswer,
  ): Promise<{ readonly taken: boolean; readonly record: JournaledStep }> {
    let taken = false;
    const record = await this.settle(owner, journal, name, async (answered) => {
      if (answered !== undefined) return answered;
      const record = answerRecord(answer, Date.now());
      await this.steps.put(owner, journal, signalAnswerStep(name), record);
      taken = true;
      return record;
    });
    if (taken) this.ring(restKey(owner, journal));
    return { taken, record };
  }

  /** Waits until `wakeAtMs`, or until the call's signal is answered; false when `signal` aborted. */
  async until(key: string, wakeAtMs: number, signal: AbortSignal): Promise<boolean> {
    if (this.rung.delete(key)) return !signal.aborted;
    const early = new AbortController();
    const wake = () => early.abort();
    this.resting.set(key, wake);
    try {
      await untilWake(wakeAtMs, AbortSignal.any([signal, early.signal]));
      return !signal.aborted;
    } finally {
      if (this.resting.get(key) === wake) this.resting.delete(key);
    }
  }

  /** Wakes the call resting here under its owner and journal (its sleeps were ended: `wake`). */
  wake(owner: PartitionKey, journal: StreamId): boolean {
    return this.ring(restKey(owner, journal));
  }

  /** Whether a ring for `key` came in while nothing rested (taken: it is forgotten). */
  takeRing(key: string): boolean {
    return this.rung.delete(key);
  }

  /** Wakes the call resting under `key`; none: the ring is kept for it. True when one woke. */
  private ring(key: string): boolean {
    const wake = this.resting.get(key);
    this.resting.delete(key);
    if (wake !== undefined) {
      wake();
      return true;
    }
    if (this.rung.size >= MAX_RUNG) this.rung.delete(this.rung.values().next().value as string);
    this.rung.add(key);
    return false;
  }

  private async answerOf(
    owner: PartitionKey,
    journal: StreamId,
    name: string,
  ): Promise<JournaledStep | undefined> {
    const record = await this.steps.get(owner, journal, signalAnswerStep(name));
    return record !== undefined && isStepOutcome(record) ? record : undefined;
  }

  /** Runs `fn` with the signal's journaled answer, after every settling of it begun before. */
  private settle<T>(
    owner: PartitionKey,
    journal: StreamId,
    name: string,
    fn: (answered: JournaledStep | undefined) => Promise<T>,
  ): Promise<T> {
    const key = `${restKey(owner, journal)}\u0000${name}`;
    const before = this.settling.get(key) ?? Promise.resolve();
    const settled = before
      .catch(() => undefined)
      .then(async () => fn(await this.answerOf(owner, journal, name)));
    this.settling.set(key, settled);
    void settled
      .catch(() => undefined)
      .finally(() => {
        if (this.settling.get(key) === settled) this.settling.delete(key);
      });
    return settled;
  }
}

/** What a resting call is known by here: its owner key and journal stream. */
export function restKey(owner: PartitionKey, journal: StreamId): string {
  return `${owner}\u0000${journal}`;
}
