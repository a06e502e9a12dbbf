import type { LogPort, TopicNames, WorkerEpoch } from '@tidemark/protocol';
import { CompactedTable } from './compacted-table.js';

/**
 * A worker's word that it goes on running the calls it started on a partition it is giving up
 * (rebalanced away, or drained), until `untilMs` — or that it is done (`released`). The
 * partition's next owner reads it before it takes over a call of that worker: while the notice
 * holds it waits for the call's own end instead of running it again as a new generation (a reset
 * the client would see).
 */
export interface HandoffNotice {
  readonly epoch: WorkerEpoch;
  /** Until when the old owner runs its calls; after that, whatever is unfinished is taken over. */
  readonly untilMs: number;
  /** The old owner finished (or gave up): nothing of it is running any more. */
  readonly released: boolean;
  /**
   * Counts up while the old owner lives (it writes the notice again every second or so): a next
   * owner that sees it stand still knows the old owner died mid-handoff, without waiting `untilMs`.
   */
  readonly beat: number;
}

const NOTICE_VERSION = 1;

/**
 * The key of a worker's notice in `streams`. Heads and steps keys hold a `/` (`session/stream`),
 * so a notice never shares a key with them; housekeeping forgets it like any unfinished key
 * without a session, a session TTL after it was written.
 */
function noticeKey(epoch: WorkerEpoch): string {
  return `handoff:${epoch}`;
}

/**
 * Handoff notices, in the compacted `streams` topic on the partition they concern (the partition
 * of the heads they are about, so whoever reads those heads reads the notice from the same place).
 */
export class HandoffNotices {
  private readonly table: CompactedTable<HandoffNotice>;

  constructor(options: { port: LogPort; topics: TopicNames }) {
    this.table = new CompactedTable<HandoffNotice>({
      port: options.port,
      topic: options.topics.streams,
      decode: decodeNotice,
      encode: (notice) => Buffer.from(JSON.stringify({ v: NOTICE_VERSION, ...notice })),
      cacheEntries: 256,
    });
  }

  /** The worker goes on running its calls of `partition` until `untilMs` (`beat`: see the notice). */
  announce(partition: number, epoch: WorkerEpoch, untilMs: number, beat = 0): Promise<void> {
    return this.table.put(partition, noticeKey(epoch), { epoch, untilMs, released: false, beat });
  }

  /** The worker runs nothing of `partition` any more. */
  release(partition: number, epoch: WorkerEpoch): Promise<void> {
    return this.table.put(partition, noticeKey(epoch), {
      epoch,
      untilMs: Date.now(),
      released: true,
      beat: 0,
    });
  }

  /**
   * The worker's notice for `partition`, read up to the partition's high watermark of now, and
   * where it is in `streams` (what orders it against the heads there).
   */
  async get(
    partition: number,
    epoch: WorkerEpoch,
  ): Promise<(HandoffNotice & { readonly offset: bigint }) | undefined> {
    const notice = await this.table.get(partition, noticeKey(epoch));
    const offset = this.table.entry(partition, noticeKey(epoch))?.offset;
    return notice === undefined || offset === undefined ? undefined : { ...notice, offset };
  }

  /** Drops what is held of a partition this process stopped serving. */
  forget(partition: number): void {
    this.table.release(partition);
  }
}

function decodeNotice(value: Uint8Array): HandoffNotice | undefined {
  let stored: unknown;
  try {
    stored = JSON.parse(Buffer.from(value).toString());
  } catch {
    return undefined;
  }
  const notice = stored as Partial<HandoffNotice> & { v?: unknown };
  if (
    notice.v !== NOTICE_VERSION ||
    typeof notice.epoch !== 'string' ||
    typeof notice.untilMs !== 'number' ||
    typeof notice.released !== 'boolean'
  )
    return undefined;
  const beat = typeof notice.beat === 'number' ? notice.beat : 0;
  return { epoch: notice.epoch, untilMs: notice.untilMs, released: notice.released, beat };
}
