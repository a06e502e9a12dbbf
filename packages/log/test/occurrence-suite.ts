import { createKeyring, eventStreamKey, type LogPort } from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';
import { OccurrenceLog, type StoredOccurrence } from '../src/index.js';

// Polling an event stream from the log (#35): a cursor resumes exactly after what the client
// has; retention shows as `truncated` with a cursor to go on from, never as a silent skip; a
// cursor of another stream, log or deployment, or one past the end, is refused.

const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(7) } });
const nowMs = Date.parse('2026-12-02T00:00:00Z');
const ticks = eventStreamKey('ticks', { everyMs: 1000 });
const tocks = eventStreamKey('ticks', { everyMs: 2000 });

const tick = (n: number): StoredOccurrence => ({
  eventId: `evt_${n}`,
  name: 'ticks',
  timestamp: new Date(nowMs + n).toISOString(),
  data: { n },
});

const numbers = (answer: Awaited<ReturnType<OccurrenceLog['poll']>>) =>
  answer.ok ? answer.events.map((event) => event.data['n']) : answer.problem;

/** A log and a fresh topic of `partitions` on it, removed when the test finishes. */
export type OpenTopic = (partitions: number) => Promise<{ port: LogPort; topic: string }>;

/** The polling suite, on the log `open` gives: both logs must pass it. */
export function describeOccurrencePolling(label: string, open: OpenTopic): void {
  async function occurrences(partitions = 1) {
    const { port, topic } = await open(partitions);
    const options = {
      log: port,
      topic,
      partitionCount: partitions,
      logIdentity: await port.identity(topic),
      keyring,
    };
    return { log: port, topic, options, occurrences: new OccurrenceLog(options) };
  }

  describe(`polling an event stream (${label})`, () => {
    it('starts from now, then returns each occurrence once, in order, in pages of maxEvents', async () => {
      const { occurrences: log } = await occurrences();
      await log.append(ticks, [tick(1)]);
      const start = await log.poll({ stream: ticks, maxEvents: 10, nowMs });
      expect(start).toMatchObject({ ok: true, events: [], truncated: false });
      await log.append(ticks, [tick(2), tick(3), tick(4)]);
      await log.append(tocks, [tick(99)]); // another stream, the same partition
      const first = await log.poll({
        stream: ticks,
        cursor: start.ok ? start.cursor : '',
        maxEvents: 2,
        nowMs,
      });
      expect(numbers(first)).toEqual([2, 3]);
      const second = await log.poll({
        stream: ticks,
        cursor: first.ok ? first.cursor : '',
        maxEvents: 2,
        nowMs,
      });
      expect(numbers(second)).toEqual([4]);
      const idle = await log.poll({
        stream: ticks,
        cursor: second.ok ? second.cursor : '',
        maxEvents: 2,
        nowMs,
      });
      expect(idle).toMatchObject({ ok: true, events: [], truncated: false });
      // Each occurrence's own cursor resumes right after it.
      const after2 = first.ok ? first.events[0]!.cursor! : '';
      expect(
        numbers(await log.poll({ stream: ticks, cursor: after2, maxEvents: 10, nowMs })),
      ).toEqual([3, 4]);
    });

    it('says truncated when retention took occurrences the client had not read, and goes on', async () => {
      const { log: port, topic, occurrences: log } = await occurrences();
      const start = await log.poll({ stream: ticks, maxEvents: 10, nowMs });
      await log.append(ticks, [tick(1), tick(2), tick(3), tick(4)]);
      await port.deleteRecordsBefore(topic, 0, 2n); // retention took 1 and 2
      const answer = await log.poll({
        stream: ticks,
        cursor: start.ok ? start.cursor : '',
        maxEvents: 10,
        nowMs,
      });
      expect(answer).toMatchObject({ ok: true, truncated: true });
      expect(numbers(answer)).toEqual([3, 4]);
      const next = await log.poll({
        stream: ticks,
        cursor: answer.ok ? answer.cursor : '',
        maxEvents: 10,
        nowMs,
      });
      expect(next).toMatchObject({ ok: true, events: [], truncated: false });
    });

    it('refuses a cursor of another stream, another log, another deployment, or past the end', async () => {
      const { occurrences: log, options } = await occurrences();
      await log.append(ticks, [tick(1)]);
      const start = await log.poll({ stream: ticks, maxEvents: 10, nowMs });
      const cursor = start.ok ? start.cursor : '';
      expect(await log.poll({ stream: tocks, cursor, maxEvents: 10, nowMs })).toMatchObject({
        ok: false,
        problem: 'other-stream',
      });
      const other = await occurrences();
      await other.occurrences.append(ticks, [tick(1), tick(2)]);
      const theirs = await other.occurrences.poll({ stream: ticks, maxEvents: 10, nowMs });
      const elsewhere = new OccurrenceLog({
        ...options,
        logIdentity: { clusterId: 'x', topicId: 'y' },
      });
      expect(await elsewhere.poll({ stream: ticks, cursor, maxEvents: 10, nowMs })).toMatchObject({
        ok: false,
        problem: 'other-log',
      });
      // The other log is ahead: its cursor is past the end of this one (and names another log).
      expect(
        (
          await log.poll({
            stream: ticks,
            cursor: theirs.ok ? theirs.cursor : '',
            maxEvents: 10,
            nowMs,
          })
        ).ok,
      ).toBe(false);
      const rotated = new OccurrenceLog({
        ...options,
        keyring: createKeyring({ current: { id: 2, secret: new Uint8Array(32).fill(8) } }),
      });
      expect(await rotated.poll({ stream: ticks, cursor, maxEvents: 10, nowMs })).toMatchObject({
        ok: false,
        problem: 'unknown-key',
      });
      expect(
        await log.poll({ stream: ticks, cursor: 'forged', maxEvents: 10, nowMs }),
      ).toMatchObject({
        ok: false,
        problem: 'malformed',
      });
    });

    it('keeps every occurrence of a stream in one partition', async () => {
      const { occurrences: log } = await occurrences(4);
      const start = await log.poll({ stream: ticks, maxEvents: 100, nowMs });
      await log.append(ticks, [1, 2, 3, 4, 5, 6].map(tick));
      const all = await log.poll({
        stream: ticks,
        cursor: start.ok ? start.cursor : '',
        maxEvents: 100,
        nowMs,
      });
      expect(numbers(all)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(log.partitionOf(ticks)).toBe(
        log.partitionOf(eventStreamKey('ticks', { everyMs: 1000 })),
      );
    });
  });
}
