import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countEffects } from './effects.ts';
import { Timeline } from './timeline.ts';

// The chaos runner's oracle, on its own: what it excuses and what it does not (#54).

describe('the chaos oracle', () => {
  const call = { startedMs: 10_000, endedMs: 12_000 };

  it('excuses an error only by a fault that breaks connections, near the call', () => {
    for (const kind of ['gateway', 'cut', 'hold'] as const) {
      const timeline = new Timeline();
      timeline.record(kind, 11_000, 11_500);
      expect(timeline.explainsError(call), kind).toBe(true);
    }
    // A worker's death or drain, deleted records, a change of members: a takeover or a reset.
    for (const kind of ['worker', 'delete', 'membership'] as const) {
      const timeline = new Timeline();
      timeline.record(kind, 11_000, 11_500);
      expect(timeline.explainsError(call), kind).toBe(false);
    }
    const far = new Timeline();
    far.record('cut', 20_000, 20_100);
    expect(far.explainsError(call)).toBe(false);
    // A long call hit by a cut it recovered from, erroring much later: not the cut's error.
    const recovered = new Timeline();
    recovered.record('cut', 11_000, 11_100);
    expect(recovered.explainsError({ startedMs: 10_000, endedMs: 30_000 })).toBe(false);
    expect(recovered.explainsError({ startedMs: 10_000, endedMs: 15_000 })).toBe(true);
  });

  it('counts a second run of a step as duplicated unless the runner killed the first run’s process', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'tidemark-oracle-')), 'effects.jsonl');
    const run = (effectKey: string, pid: number, attempt = 1) =>
      appendFileSync(
        file,
        `${JSON.stringify({ effectKey, pid, session: 's', stream: 't', attempt })}\n`,
      );
    run('a', 100);
    run('b', 100);
    run('b', 200); // 100 killed -9: excused
    run('c', 200);
    run('c', 300, 2); // 200 alive (drained, retried, replayed wrongly): duplicated
    const count = countEffects(file, new Set(['a', 'b', 'c', 'd']), new Set([100]));
    expect(count).toMatchObject({ applied: 5, inFlight: 1, lost: ['d'] });
    expect(count.duplicated).toHaveLength(1);
    expect(count.duplicated[0]).toMatchObject({ effectKey: 'c', session: 's' });
    expect(count.duplicated[0]?.text).toMatch(
      /^c .*pid 200 \(attempt 1\), which was not killed, then again by pid 300 \(attempt 2\)/,
    );
  });
});
