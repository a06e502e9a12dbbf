import type { StepRecord } from '@tidemark/log';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';

/** A call's journaled steps, with their names (a step's key in the journal). */
export type JournalListing = () => Promise<ReadonlyArray<{ readonly step: string } & StepRecord>>;

/**
 * The order of a call's steps in its journal, read once when an execution replays it: the check
 * that this code takes the same steps in the same places (else `journal-mismatch`, never a replay
 * that mixes two versions' effects), and what `patched` asks — did the code that wrote the journal
 * take steps past this point?
 */
export class JournalOrder {
  private loaded: ReturnType<typeof load> | undefined;

  /** `list` reads the journal; none: nothing was journaled before this process (a first run). */
  constructor(private readonly list: JournalListing | undefined) {}

  private get order(): ReturnType<typeof load> {
    return (this.loaded ??=
      this.list === undefined ? load(() => Promise.resolve([])) : load(this.list));
  }

  /**
   * Throws `journal-mismatch` when the step this code takes as its `index`-th is not the journal's:
   * the journal holds it at another place, or another step at this one.
   */
  async check(
    step: string,
    index: number,
    journaled: StepRecord | undefined,
    version: string | undefined,
  ): Promise<void> {
    if (journaled?.index !== undefined) {
      if (journaled.index !== index)
        throw mismatch(
          index,
          step,
          version,
          `'${step}' as step ${journaled.index}`,
          journaled.version,
        );
      return;
    }
    const there = (await this.order).byIndex.get(index);
    if (there !== undefined && there.step !== step)
      throw mismatch(index, step, version, `'${there.step}' there`, there.version);
  }

  /** Whether the journal holds steps past the first `taken`: the code that wrote it went on. */
  async ranPast(taken: number): Promise<boolean> {
    return (await this.order).last > taken;
  }
}

async function load(list: JournalListing) {
  const byIndex = new Map<number, StepRecord & { step: string }>();
  let last = 0;
  for (const record of await list()) {
    if (record.index === undefined) continue; // journaled before steps had places, or a marker
    byIndex.set(record.index, record);
    last = Math.max(last, record.index);
  }
  return { byIndex, last };
}

function mismatch(
  index: number,
  step: string,
  version: string | undefined,
  journal: string,
  journalVersion: string | undefined,
): TidemarkError {
  const of = (v: string | undefined) => (v === undefined ? '' : ` (version ${v})`);
  return new TidemarkError(
    ErrorCodes.journalMismatch,
    `journal-mismatch: step ${index} of this call is '${step}' in this code${of(version)}, but its journal holds ${journal}${of(journalVersion)}. A deploy changed the tool's steps under a call in flight; guard the change with currentExecution().patched(id)`,
  );
}
