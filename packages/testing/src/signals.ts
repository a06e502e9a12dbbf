import type { StepRecord } from '@tidemark/log';
import { signalAnswerStep } from '@tidemark/protocol';
import { answerRecord, type SignalHost } from '@tidemark/worker/harness';

/** `ToolSessionOptions.signals`: a signal's answer, as its URL's POST would bring it. */
export type SignalAnswerer = (signal: { readonly name: string; readonly url: string }) => unknown;

/**
 * The signals of one call in the harness: minted with a URL of the test's (nobody serves it), and
 * answered — when the tool waits, in place — by the test's `answerer`, journaled as a worker
 * journals a POST. No answer (no answerer, or undefined) ends the wait as an expiry would.
 */
export function harnessSignals(
  journal: Map<string, StepRecord>,
  answerer: SignalAnswerer | undefined,
): SignalHost {
  return {
    mint: (name) => `http://tidemark.test/mcp/signals/${encodeURIComponent(name)}`,
    answered: async (name) => {
      const key = signalAnswerStep(name);
      const known = journal.get(key);
      if (known !== undefined) return known as ReturnType<typeof answerRecord>;
      const asked = journal.get(`signal ${name}`);
      const url =
        asked !== undefined && 'outcome' in asked && asked.outcome.ok
          ? (asked.outcome.value as { url: string }).url
          : '';
      const value = await answerer?.({ name, url });
      if (value === undefined) return undefined;
      const record = answerRecord({ value }, Date.now());
      journal.set(key, record);
      return record;
    },
    expire: (name) => {
      const record = answerRecord('expired', Date.now());
      journal.set(signalAnswerStep(name), record);
      return Promise.resolve(record);
    },
  };
}
