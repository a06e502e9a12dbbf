import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decideResume,
  encodeEventId,
  foldStreamHead,
  StreamCursor,
  verifyEventId,
  type CursorStep,
  type Generation,
  type StampedRecord,
  type StreamHead,
  type StreamId,
  type WorkerEpoch,
} from '../src/index.js';
import { runs } from '@tidemark/fixtures/runs';
import { keyring, log, otherSession, session, stream } from './helpers.js';

/**
 * A simulated partition with one stream under fire: workers restart, take over and retry; zombies
 * keep writing; retention evicts and compaction punches holes; a client receives the stream live,
 * drops, and resumes with its last id against a head that may lag. The checker reads what the
 * client saw: between two resets it must be one generation, contiguous, with no duplicate, and a
 * final record must be the one that won. A client never told to reset must hold the stream exactly.
 */

type Command =
  | { t: 'emit' }
  | { t: 'zombie'; terminal: boolean }
  | { t: 'takeover' }
  | { t: 'retry' }
  | { t: 'terminal' }
  | { t: 'noise' }
  | { t: 'evict'; n: number }
  | { t: 'compact'; pick: number }
  | { t: 'drop' }
  | { t: 'resume'; lag: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ t: 'emit' as const }) },
  { weight: 1, arbitrary: fc.boolean().map((terminal) => ({ t: 'zombie' as const, terminal })) },
  { weight: 1, arbitrary: fc.constant({ t: 'takeover' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'retry' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'terminal' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'noise' as const }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }).map((n) => ({ t: 'evict' as const, n })) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ t: 'compact' as const, pick })) },
  { weight: 2, arbitrary: fc.constant({ t: 'drop' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .double({ min: 0, max: 1, noNaN: true })
      .map((lag) => ({ t: 'resume' as const, lag })),
  },
);

interface Entry {
  record: StampedRecord<string>;
  mine: boolean;
  removed: boolean;
}

interface Writer {
  generation: Generation;
  nextSeq: number;
  stopped: boolean;
}

interface Seen {
  generation: Generation;
  seq: number;
  final: boolean;
  payload: string | undefined;
}

/** Generations compared by their fields: the oracle does not borrow the product's comparison. */
const same = (a: Generation | undefined, b: Generation | undefined) =>
  a !== undefined && b !== undefined && a.epoch === b.epoch && a.attempt === b.attempt;

class Simulation {
  readonly entries: Entry[] = [];
  /**
   * The stream's outcome as the simulation wrote it, kept by the writers themselves (not folded
   * from the log by the product's code): the generation started last wins, until the one that is
   * current writes a terminal record — that ends the stream, whatever is written after it.
   */
  readonly truth: { generation?: Generation; terminalOffset?: bigint } = {};
  logStart = 0n;
  private epochs = 0;
  private readonly writers: Writer[] = [];

  // The client.
  connected = true;
  finished = false;
  resets = 0;
  view: Seen[] = [];
  lastId = this.mint(0n, undefined, 0);
  cursor = new StreamCursor<string>({
    generation: undefined,
    nextSeq: 1,
    clientHasEvents: false,
    fromOffset: 0n,
  });
  readonly decisions: string[] = [];

  get hwm(): bigint {
    return BigInt(this.entries.length);
  }

  run(commands: Command[]): void {
    for (const c of commands) this.step(c);
  }

  private step(c: Command): void {
    const current = this.writers.at(-1);
    switch (c.t) {
      case 'emit':
        if (current === undefined) this.startGeneration('first');
        else if (!current.stopped) this.write(current, 'message');
        return;
      case 'zombie': {
        const zombie = this.writers.at(-2);
        if (zombie !== undefined && !zombie.stopped)
          this.write(zombie, c.terminal ? 'terminal' : 'message');
        return;
      }
      case 'takeover':
      case 'retry':
        if (current !== undefined) this.startGeneration(c.t === 'retry' ? 'retry' : 'takeover');
        return;
      case 'terminal':
        if (current !== undefined && !current.stopped) this.write(current, 'terminal');
        return;
      case 'noise':
        this.append(
          {
            offset: this.hwm,
            stamp: {
              stream: 'n8' as StreamId,
              generation: { epoch: this.epoch(), attempt: 1 },
              seq: 1,
              kind: 'message',
            },
          },
          false,
        );
        return;
      case 'evict':
        this.logStart =
          this.logStart + BigInt(c.n) > this.hwm ? this.hwm : this.logStart + BigInt(c.n);
        return;
      case 'compact': {
        const held = this.entries.filter((e) => !e.removed && e.record.offset >= this.logStart);
        const victim = held[c.pick % Math.max(held.length, 1)];
        // Compaction never removes the last record of a partition.
        if (victim !== undefined && victim.record.offset < this.hwm - 1n) victim.removed = true;
        return;
      }
      case 'drop':
        this.connected = false;
        return;
      case 'resume':
        if (!this.finished) this.resume(c.lag);
        return;
    }
  }

  private epoch(): WorkerEpoch {
    return (this.epochs++).toString(16).padStart(20, '0') as WorkerEpoch;
  }

  private startGeneration(cause: 'first' | 'retry' | 'takeover'): void {
    const previous = this.writers.at(-1);
    const epoch =
      cause === 'retry' && previous !== undefined ? previous.generation.epoch : this.epoch();
    const attempt = Math.max(0, ...this.writers.map((w) => w.generation.attempt)) + 1;
    const writer: Writer = { generation: { epoch, attempt }, nextSeq: 1, stopped: false };
    this.writers.push(writer);
    if (this.truth.terminalOffset === undefined) this.truth.generation = writer.generation;
    this.append(
      {
        offset: this.hwm,
        stamp: { stream, generation: writer.generation, seq: 0, kind: 'generation-start', cause },
      },
      true,
    );
  }

  private write(writer: Writer, kind: 'message' | 'terminal'): void {
    const seq = writer.nextSeq++;
    if (kind === 'terminal') writer.stopped = true;
    const payload = `${writer.generation.epoch.slice(-3)}.${writer.generation.attempt}:${seq}`;
    if (
      kind === 'terminal' &&
      writer === this.writers.at(-1) &&
      this.truth.terminalOffset === undefined
    )
      this.truth.terminalOffset = this.hwm;
    this.append(
      { offset: this.hwm, stamp: { stream, generation: writer.generation, seq, kind }, payload },
      true,
    );
  }

  private append(record: StampedRecord<string>, mine: boolean): void {
    this.entries.push({ record, mine, removed: false });
    if (mine && this.connected && !this.finished) this.apply(this.cursor.accept(record));
  }

  /** The head as a gateway would hold it: the stored head (written at generation start and terminal), folded forward over what is still in the log up to a lagging position. */
  private head(lag: number): StreamHead<string> | undefined {
    let head: StreamHead<string> | undefined;
    let storedUpTo = 0;
    this.entries.forEach((entry, index) => {
      if (!entry.mine) return;
      const folded = foldStreamHead(head, entry.record);
      if (
        folded.effect === 'started' ||
        folded.effect === 'superseded' ||
        folded.effect === 'terminal'
      )
        storedUpTo = index + 1;
    });
    for (let i = 0; i < storedUpTo; i++) {
      const entry = this.entries[i]!;
      if (entry.mine) head = foldStreamHead(head, entry.record).head;
    }
    const foldTo = storedUpTo + Math.floor((this.entries.length - storedUpTo) * (1 - lag));
    for (let i = storedUpTo; i < foldTo; i++) {
      const entry = this.entries[i]!;
      if (entry.mine && !entry.removed && entry.record.offset >= this.logStart)
        head = foldStreamHead(head, entry.record).head;
    }
    return head;
  }

  /** The head a gateway that read the whole history would hold (an input of the decision). */
  foldedHead(): StreamHead<string> | undefined {
    let head: StreamHead<string> | undefined;
    for (const entry of this.entries)
      if (entry.mine) head = foldStreamHead(head, entry.record).head;
    return head;
  }

  private resume(lag: number): void {
    const claim = verifyEventId(this.lastId, { session, keyring, nowMs: 0 });
    const decision = decideResume<string>({
      claim,
      logIdentity: log,
      partition: 0,
      logStartOffset: this.logStart,
      highWatermark: this.hwm,
      head: this.head(lag),
    });
    this.decisions.push(`${decision.outcome}:${decision.reason}`);
    // Every id the client holds was minted for it by the server: never invalid — except a priming
    // id whose stream left no head while the log moved past it (its result expired, or its
    // request waited longer than the retention): nothing of it will come, and the client is told.
    const nothingWillCome =
      decision.outcome === 'invalid' &&
      decision.reason === 'unknown-stream' &&
      claim.ok &&
      claim.claim.generation === undefined &&
      this.head(lag) === undefined &&
      claim.claim.offset < this.logStart;
    expect(
      decision.outcome !== 'invalid' || nothingWillCome,
      `genuine claim refused: ${JSON.stringify(decision, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
    ).toBe(true);
    if (decision.outcome === 'invalid') {
      this.finished = true;
      return;
    }
    if (decision.outcome === 'reset') this.reset();
    const plan = decision.plan;
    if (plan.kind === 'none') {
      this.finished = true;
      return;
    }
    if (plan.kind === 'final') {
      this.deliver(
        {
          generation: plan.generation,
          seq: plan.terminal.seq,
          final: true,
          payload: plan.terminal.payload,
        },
        plan.terminal.offset,
      );
      return;
    }
    this.cursor = new StreamCursor<string>({
      generation: plan.generation,
      nextSeq: plan.nextSeq,
      clientHasEvents: plan.clientHasEvents,
      fromOffset: plan.fromOffset,
      terminal: plan.terminal,
    });
    this.connected = true;
    for (const entry of this.entries) {
      if (this.finished) break;
      if (
        entry.mine &&
        !entry.removed &&
        entry.record.offset >= this.logStart &&
        entry.record.offset >= plan.fromOffset
      ) {
        this.apply(this.cursor.accept(entry.record));
      }
    }
    // At the tail: a final record the head knows of but the read did not meet was compacted away.
    const completion = this.cursor.complete(stream);
    if (completion !== undefined) this.apply(completion);
  }

  private apply(step: CursorStep<string>): void {
    if (step.kind === 'skip') return;
    if (step.kind === 'reset-only') {
      this.reset();
      this.lastId = this.mint(step.record.offset, step.generation, 0);
      return;
    }
    if (step.resetBefore !== undefined) this.reset();
    const { stamp } = step.record;
    this.deliver(
      {
        generation: stamp.generation,
        seq: stamp.seq,
        final: step.final,
        payload: step.record.payload,
      },
      step.record.offset,
    );
  }

  private reset(): void {
    this.resets++;
    this.view = [];
  }

  private deliver(seen: Seen, offset: bigint): void {
    const previous = this.view.at(-1);
    if (previous !== undefined) {
      // Between resets: one execution, contiguous, no duplicate, nothing after the final record.
      expect(same(previous.generation, seen.generation), 'splice of two generations').toBe(true);
      expect(seen.seq, 'gap or duplicate').toBe(previous.seq + 1);
      expect(previous.final, 'event after the final record').toBe(false);
    }
    expect(seen.payload).toBe(this.entries[Number(offset)]!.record.payload);
    expect(this.entries[Number(offset)]!.record.stamp.seq).toBe(seen.seq);
    this.view.push(seen);
    this.lastId = this.mint(offset, seen.generation, seen.seq);
    if (seen.final) {
      expect(this.truth.terminalOffset, 'final record of a losing generation').toBe(offset);
      this.finished = true;
    }
  }

  private mint(offset: bigint, generation: Generation | undefined, seq: number): string {
    return encodeEventId(
      { logIdentity: log, partition: 0, offset, generation, seq, stream },
      session,
      keyring,
    );
  }
}

function runToEnd(commands: Command[]): Simulation {
  const sim = new Simulation();
  sim.run(commands);
  sim.run([{ t: 'resume', lag: 0 }]);
  // The product's fold of the whole history names the outcome the writers made.
  const folded = sim.foldedHead();
  expect(
    folded?.generation === sim.truth.generation || same(folded?.generation, sim.truth.generation),
  ).toBe(true);
  expect(folded?.terminal?.offset).toBe(sim.truth.terminalOffset);
  if (sim.resets === 0 && sim.view.length > 0) {
    // Told nothing: it must hold the current generation from seq 1 without a hole.
    expect(sim.view[0]!.seq).toBe(1);
    expect(same(sim.view[0]!.generation, sim.truth.generation), 'not the winning generation').toBe(
      true,
    );
  }
  return sim;
}

/** Counterexamples fast-check found once, kept as named regressions. */
const regressions: Array<[string, Command[]]> = [
  [
    'a finished stream whose final record was compacted away is not continued by a later generation',
    [
      { t: 'emit' },
      { t: 'drop' },
      { t: 'terminal' },
      { t: 'takeover' },
      { t: 'compact', pick: 66939109 },
      { t: 'emit' },
      { t: 'noise' },
    ],
  ],
  [
    'a retry started after the terminal record, with a record compacted',
    [
      { t: 'emit' },
      { t: 'drop' },
      { t: 'terminal' },
      { t: 'retry' },
      { t: 'emit' },
      { t: 'compact', pick: 448265973 },
    ],
  ],
  [
    'a takeover after the terminal record, client dropped before the first record',
    [
      { t: 'drop' },
      { t: 'emit' },
      { t: 'terminal' },
      { t: 'takeover' },
      { t: 'emit' },
      { t: 'compact', pick: 170897857 },
    ],
  ],
];

describe('decideResume over generated logs (restarts, takeovers, retries, zombies, retention, compaction)', () => {
  it.each(regressions)('regression: %s', (_name, commands) => {
    runToEnd(commands);
  });

  it('never splices, never leaves a gap, never duplicates; a client never reset holds the exact stream', () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 80 }), (commands) => {
        runToEnd(commands);
      }),
      { numRuns: runs(3000) },
    );
  });

  it('every claim gets exactly one outcome; forged and foreign claims are always invalid, never reset', () => {
    fc.assert(
      fc.property(
        fc.array(command, { maxLength: 40 }),
        fc.nat(),
        fc.nat(),
        (commands, flipAt, delta) => {
          const sim = new Simulation();
          sim.run(commands);
          const input = {
            logIdentity: log,
            partition: 0,
            logStartOffset: sim.logStart,
            highWatermark: sim.hwm,
            head: sim.foldedHead(),
          };
          const bytes = Buffer.from(sim.lastId, 'base64url');
          bytes[flipAt % bytes.length] =
            (bytes[flipAt % bytes.length] as number) ^ (1 + (delta % 255));
          const forged = decideResume({
            ...input,
            claim: verifyEventId(bytes.toString('base64url'), { session, keyring, nowMs: 0 }),
          });
          expect(forged.outcome).toBe('invalid');
          const foreign = decideResume({
            ...input,
            claim: verifyEventId(sim.lastId, { session: otherSession, keyring, nowMs: 0 }),
          });
          expect(foreign).toMatchObject({ outcome: 'invalid', reason: 'other-session' });
          const beyond = encodeEventId(
            {
              logIdentity: log,
              partition: 0,
              offset: sim.hwm + BigInt(delta % 5),
              generation: sim.foldedHead()?.generation ?? {
                epoch: '0'.repeat(20) as WorkerEpoch,
                attempt: 1,
              },
              seq: 1,
              stream,
            },
            session,
            keyring,
          );
          expect(
            decideResume({
              ...input,
              claim: verifyEventId(beyond, { session, keyring, nowMs: 0 }),
            }),
          ).toMatchObject({ outcome: 'invalid', reason: 'beyond-tail' });
        },
      ),
      { numRuns: runs(1000) },
    );
  });
});
