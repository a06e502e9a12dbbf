import type { Request, Response } from 'express';
import { sseComment, sseFrame } from '@tidemark/gateway/http';
import { parsePartitionKey } from '@tidemark/protocol';
import type { LiveTail, TailItem } from './live-tail.js';
import type { LogView } from './log-view.js';
import type { JournalEntry, ResumeJournal } from './resume-journal.js';
import type { Visibility } from './visibility.js';

export interface LiveDeps {
  readonly tail: LiveTail;
  readonly view: LogView;
  readonly journal: ResumeJournal | undefined;
  /** The open live-tail responses, ended by `close`. */
  readonly live: Set<Response>;
}

/** The live tail as SSE: records (`event: record`) and resume decisions (`event: resume`). */
export async function liveEvents(
  req: Request,
  res: Response,
  visibility: Visibility,
  { tail, view, journal, live }: LiveDeps,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  res.write(sseComment('live'));
  live.add(res);
  const owners = new Map<string, Promise<boolean>>();
  const maySee = (session: string): Promise<boolean> => {
    if (visibility.all) return Promise.resolve(true);
    let known = owners.get(session);
    if (known === undefined) {
      if (owners.size >= 10_000) owners.clear(); // a tab open for days meets many sessions
      const key = parsePartitionKey(session);
      known =
        key === undefined
          ? Promise.resolve(false)
          : view.ownerOf(key).then(
              (owner) => owner?.subject === visibility.subject,
              () => false,
            );
      owners.set(session, known);
    }
    return known;
  };
  // A page that cannot keep up (a busy log, a slow tab) skips records rather than have them
  // queue here without bound; it is told how many it skipped once its socket drains.
  let skipped = 0;
  res.on('drain', () => {
    if (skipped === 0) return;
    res.write(sseFrame({ event: 'skipped', data: JSON.stringify({ count: skipped }) }));
    skipped = 0;
  });
  const write = (event: string, data: TailItem | JournalEntry) =>
    void maySee(data.session).then((ok) => {
      if (!ok || res.writableEnded) return;
      if (res.writableNeedDrain) return void skipped++;
      res.write(sseFrame({ event, data: JSON.stringify(data) }));
    });
  let closed = false;
  const stops: Array<() => void> = [];
  const keepAlive = setInterval(() => res.write(sseComment('keep-alive')), 15_000);
  req.on('close', () => {
    closed = true;
    live.delete(res);
    clearInterval(keepAlive);
    for (const stop of stops) stop();
  });
  const stopTail = await tail.listen((item) => write('record', item));
  stops.push(stopTail);
  if (journal !== undefined) stops.push(journal.listen((entry) => write('resume', entry)));
  // The page left while the tail was starting.
  if (closed) for (const stop of stops) stop();
}
