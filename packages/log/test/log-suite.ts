import {
  decideResume,
  decodeStamp,
  encodeEventId,
  ErrorCodes,
  createKeyring,
  foldStreamHead,
  newSessionId,
  newWorkerEpoch,
  partitionForSession,
  requestStreamId,
  verifyEventId,
  type LogPort,
  type LogRecord,
  type StampedRecord,
  type StreamHead,
  type TidemarkError,
  type TopicNames,
} from '@tidemark/protocol';
import { describe, expect, it } from 'vitest';
import {
  isStepOutcome,
  PartitionTail,
  SessionStore,
  StepJournal,
  StreamHeadStore,
  StreamWriter,
} from '../src/index.js';

export interface LogSubject {
  port: LogPort;
  /** Fresh topics for one test, all with `partitions` partitions (`streams`, `sessions` compacted). */
  readonly topics: (partitions: number) => Promise<TopicNames>;
  /** Runs the log's compaction of a compacted topic's partition now, where the test can. */
  readonly compact?: (topic: string, partition: number) => Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function collector() {
  const offsets: bigint[] = [];
  let error: TidemarkError | undefined;
  return {
    offsets,
    get error() {
      return error;
    },
    listener: {
      onRecords: (records: readonly LogRecord[]) => offsets.push(...records.map((r) => r.offset)),
      onError: (e: TidemarkError) => {
        error = e;
      },
    },
  };
}

function stamped(records: readonly LogRecord[]): StampedRecord<unknown>[] {
  return records.flatMap((record) => {
    const decoded = decodeStamp(record.headers);
    if (!decoded.ok) return [];
    const payload: unknown =
      record.value === null ? undefined : JSON.parse(Buffer.from(record.value).toString());
    return [
      {
        offset: record.offset,
        stamp: decoded.stamp,
        ...(payload === undefined ? {} : { payload }),
      },
    ];
  });
}

/** The port, counting its reads. */
function countingFetches(port: LogPort): { port: LogPort; counter: { fetches: number } } {
  const counter = { fetches: 0 };
  const counted = new Proxy(port, {
    get: (target, name, receiver) => {
      if (name === 'fetch') counter.fetches++;
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function'
        ? (value as (...args: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  return { port: counted, counter };
}

async function readAll(port: LogPort, topic: string, partition: number): Promise<LogRecord[]> {
  const { logStartOffset, highWatermark } = await port.offsets(topic, partition);
  const records: LogRecord[] = [];
  let next = logStartOffset;
  while (next < highWatermark) {
    const result = await port.fetch(topic, partition, next);
    records.push(...result.records);
    next = result.nextOffset;
  }
  return records;
}

/** The log building blocks, run unchanged over each log port implementation. */
export function describeLogComponents(name: string, subject: () => Promise<LogSubject>): void {
  describe(`log components on ${name}`, () => {
    it('hands catch-up readers over to the live tail with no gap and no duplicate while producing (3,000 records)', async () => {
      const { port, topics } = await subject();
      const { events } = await topics(1);
      const tail = new PartitionTail({ port, topic: events, partition: 0, maxWaitMs: 100 });
      const first = collector();
      const firstSub = tail.subscribe(0n, first.listener);
      const total = 3000;
      const readers: Array<{ from: bigint; c: ReturnType<typeof collector> }> = [];
      let produced = 0;
      while (produced < total) {
        const batch = Array.from({ length: 50 }, (_, i) => ({
          partition: 0,
          key: 's',
          value: Buffer.from(String(produced + i)),
        }));
        const appending = port.append(events, batch);
        if (produced % 300 === 0) {
          // Join from anywhere already written, while the tail and the producer are moving.
          const from = BigInt(Math.floor(Math.random() * (produced + 1)));
          const c = collector();
          tail.subscribe(from, c.listener);
          readers.push({ from, c });
        }
        await appending;
        produced += batch.length;
      }
      const all = Array.from({ length: total }, (_, i) => BigInt(i));
      await until(
        () =>
          [first, ...readers.map((r) => r.c)].every(
            (c) => c.offsets.length > 0 && c.offsets.at(-1) === BigInt(total - 1),
          ),
        30_000,
        'every reader to reach the end',
      );
      expect(first.offsets).toEqual(all);
      for (const { from, c } of readers) {
        expect(c.error).toBeUndefined();
        expect(c.offsets).toEqual(all.slice(Number(from)));
      }
      firstSub.close();
      tail.close();
    });

    it('shares catch-up reads among readers joining at once (a resume storm): each gets exactly its records', async () => {
      const { port, topics } = await subject();
      const { events } = await topics(1);
      const total = 2000;
      for (let i = 0; i < total; i += 500)
        await port.append(
          events,
          Array.from({ length: 500 }, (_, j) => ({
            partition: 0,
            key: `s${(i + j) % 7}`,
            value: Buffer.from(`record ${i + j}`.padEnd(40)),
          })),
        );
      const { port: counted, counter } = countingFetches(port);
      const tail = new PartitionTail({ port: counted, topic: events, partition: 0, maxWaitMs: 50 });
      // 200 readers a few records apart, all behind a tail that starts at the end.
      const readers = Array.from({ length: 200 }, (_, i) => ({
        from: BigInt(1000 + i * 5),
        c: collector(),
      }));
      const subscriptions = readers.map(({ from, c }) =>
        tail.subscribe(from, c.listener, BigInt(total)),
      );
      await until(
        () => readers.every(({ c }) => c.offsets.at(-1) === BigInt(total - 1)),
        30_000,
        'every reader to reach the end',
      );
      const all = Array.from({ length: total }, (_, i) => BigInt(i));
      for (const { from, c } of readers) {
        expect(c.error).toBeUndefined();
        expect(c.offsets).toEqual(all.slice(Number(from)));
      }
      // 1,000 records of ~60 bytes: a few shared reads, not one (or more) per reader.
      expect(counter.fetches).toBeLessThan(40);
      for (const subscription of subscriptions) subscription.close();
      tail.close();
    });

    it('reports an eviction hole to a reader, never skipping it', async () => {
      const { port, topics } = await subject();
      const { events } = await topics(1);
      await port.append(
        events,
        Array.from({ length: 20 }, () => ({ partition: 0, key: 's', value: Buffer.from('x') })),
      );
      await port.deleteRecordsBefore(events, 0, 10n);
      const tail = new PartitionTail({ port, topic: events, partition: 0, maxWaitMs: 50 });
      // A reader starting the tail below the log start, and a catch-up reader below it.
      const starter = collector();
      tail.subscribe(5n, starter.listener);
      await until(() => starter.error !== undefined, 10_000, 'the starter to hear of the hole');
      expect(starter.error?.code).toBe(ErrorCodes.offsetOutOfRange);
      expect(starter.offsets).toEqual([]);
      const live = collector();
      tail.subscribe(20n, live.listener);
      const late = collector();
      tail.subscribe(3n, late.listener);
      await until(
        () => late.error !== undefined,
        10_000,
        'the catch-up reader to hear of the hole',
      );
      expect(late.error?.code).toBe(ErrorCodes.offsetOutOfRange);
      await port.append(events, [{ partition: 0, key: 's', value: Buffer.from('y') }]);
      await until(() => live.offsets.length === 1, 10_000, 'the live reader to go on');
      expect(tail.logStartOffset).toBe(10n);
      tail.close();
    });

    it('writes stamped generations and heads; a finished stream outlives its events with its final response', async () => {
      const { port, topics } = await subject();
      const names = await topics(2);
      const session = newSessionId();
      const stream = requestStreamId(1);
      const partition = partitionForSession(session, 2);
      const writer = new StreamWriter({
        port,
        topics: names,
        epoch: newWorkerEpoch(),
        partitionCount: 2,
      });
      const heads = new StreamHeadStore({ port, topics: names, partitionCount: 2 });
      const execution = await writer.begin(session, stream, { previous: undefined });
      expect(await heads.get(session, stream)).toMatchObject({
        generation: execution.generation,
        lastSeq: 0,
        terminal: undefined,
      });
      await Promise.all(
        [1, 2, 3].map((i) =>
          execution.send({
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progress: i },
          }),
        ),
      );
      const final = {
        jsonrpc: '2.0',
        id: 1,
        result: { content: [{ type: 'text', text: 'done' }] },
      };
      await execution.finish(final);

      const records = stamped(await readAll(port, names.events, partition));
      expect(records.map((r) => [r.stamp.kind, r.stamp.seq])).toEqual([
        ['generation-start', 0],
        ['message', 1],
        ['message', 2],
        ['message', 3],
        ['terminal', 4],
      ]);
      expect(
        records
          .slice(1, 4)
          .map((r) => (r.payload as { params: { progress: number } }).params.progress),
      ).toEqual([1, 2, 3]);
      let folded: StreamHead | undefined;
      for (const record of records) folded = foldStreamHead(folded, record).head;
      const stored = await heads.get(session, stream);
      expect(stored).toMatchObject({
        generation: execution.generation,
        terminal: { seq: 4, payload: final },
      });
      expect(stored?.terminal?.offset).toBe(folded?.terminal?.offset);

      // The events expire; the head still knows the stream finished, and how.
      const { highWatermark } = await port.offsets(names.events, partition);
      await port.deleteRecordsBefore(names.events, partition, highWatermark);
      const later = await new StreamHeadStore({ port, topics: names, partitionCount: 2 }).get(
        session,
        stream,
      );
      const keyring = createKeyring({ current: { id: 1, secret: new Uint8Array(32).fill(1) } });
      const log = await port.identity(names.events);
      const claim = encodeEventId(
        {
          logIdentity: log,
          partition,
          offset: records[1]!.offset,
          generation: execution.generation,
          seq: 1,
          stream,
        },
        session,
        keyring,
      );
      const decision = decideResume({
        claim: verifyEventId(claim, { session, keyring, nowMs: 0 }),
        logIdentity: log,
        partition,
        logStartOffset: highWatermark,
        highWatermark,
        head: later,
      });
      expect(decision).toMatchObject({
        outcome: 'reset',
        reason: 'terminal-evicted',
        plan: { kind: 'final', terminal: { seq: 4, payload: final } },
      });
    });

    it('writes a message larger than one record in parts and reads it whole at its offset: from before, between and after its parts; gone parts are an eviction', async () => {
      const { port, topics } = await subject();
      const names = await topics(1);
      const session = newSessionId();
      const stream = requestStreamId(1);
      const writer = new StreamWriter({
        port,
        topics: names,
        epoch: newWorkerEpoch(),
        partitionCount: 1,
        maxMessageBytes: 1_000,
        maxResultBytes: 10_000,
      });
      const execution = await writer.begin(session, stream, { previous: undefined });
      // Where the first part lands: the partition's end now.
      const { highWatermark: firstPart } = await port.offsets(names.events, 0);
      // Every 10 bytes say where they are: a part out of place shows.
      const text = Array.from({ length: 450 }, (_, i) => String(i).padStart(9, '0')).join(',');
      const final = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } };
      const offset = await execution.finish(final);
      expect(offset - firstPart).toBe(4n); // four parts of 1,000 bytes, then the record itself
      // Read from the start, from between the parts (a tail that started there) and at the record.
      for (const from of [0n, firstPart + 2n, offset]) {
        const records = stamped((await port.fetch(names.events, 0, from)).records);
        expect(records.at(-1)).toMatchObject({ offset, stamp: { kind: 'terminal', seq: 1 } });
        expect(records.at(-1)?.payload).toEqual(final);
        expect(records.filter((r) => r.stamp.kind === 'terminal')).toHaveLength(1);
      }
      // The head does not hold it (it would not fit its one record either): it says it is in the
      // log, with the error a reader answers once the log no longer holds it.
      const head = await new StreamHeadStore({ port, topics: names, partitionCount: 1 }).get(
        session,
        stream,
      );
      expect(head?.terminal).toMatchObject({ offset, inLog: true, payload: { id: 1, error: {} } });
      await port.deleteRecordsBefore(names.events, 0, firstPart + 1n);
      await expect(port.fetch(names.events, 0, offset)).rejects.toMatchObject({
        code: ErrorCodes.offsetOutOfRange,
      });
      // Past the result limit: the final message is the error that names its size and the limit.
      const next = await writer.begin(session, requestStreamId(2), { previous: undefined });
      const refused = await next.finish({ ...final, id: 2, result: { text: 'x'.repeat(20_000) } });
      const [record] = stamped((await port.fetch(names.events, 0, refused)).records);
      expect(record?.payload).toMatchObject({ id: 2, error: { data: { limit: 10_000 } } });
      expect(JSON.stringify(record?.payload)).toMatch(/more than the 10000 this server carries/);
    });

    it('fences a zombie by log order: the old generation’s late records are dropped by the head reducer', async () => {
      const { port, topics } = await subject();
      const names = await topics(1);
      const session = newSessionId();
      const stream = requestStreamId('call-7');
      const workerA = new StreamWriter({
        port,
        topics: names,
        epoch: newWorkerEpoch(),
        partitionCount: 1,
      });
      const workerB = new StreamWriter({
        port,
        topics: names,
        epoch: newWorkerEpoch(),
        partitionCount: 1,
      });
      const heads = new StreamHeadStore({ port, topics: names, partitionCount: 1 });
      const a = await workerA.begin(session, stream, { previous: undefined });
      await a.send({ n: 'a1' });
      const b = await workerB.begin(session, stream, {
        previous: await heads.get(session, stream),
      });
      expect(b.generation.attempt).toBe(2);
      await b.send({ n: 'b1' });
      await a.send({ n: 'a2' }); // the zombie did not hear it lost the partition
      await a.finish({ n: 'a-final' });
      await b.finish({ n: 'b-final' });
      const effects: string[] = [];
      let head: StreamHead | undefined;
      for (const record of stamped(await readAll(port, names.events, 0))) {
        const result = foldStreamHead(head, record);
        head = result.head;
        effects.push(result.effect);
      }
      expect(effects).toEqual([
        'started',
        'appended',
        'superseded',
        'appended',
        'dropped-superseded',
        'dropped-superseded',
        'terminal',
      ]);
      expect(head).toMatchObject({
        generation: b.generation,
        terminal: { payload: { n: 'b-final' } },
      });
    });

    it('a zombie’s finished head does not hide the newer generation: `decided` gives the unfinished one the log chose', async () => {
      const { port, topics } = await subject();
      const names = await topics(1);
      const session = newSessionId();
      const stream = requestStreamId('call-8');
      const [workerA, workerB] = [newWorkerEpoch(), newWorkerEpoch()].map(
        (epoch) => new StreamWriter({ port, topics: names, epoch, partitionCount: 1 }),
      );
      const heads = new StreamHeadStore({ port, topics: names, partitionCount: 1 });
      const a = await workerA!.begin(session, stream, { previous: undefined });
      await a.send({ n: 'a1' });
      const b = await workerB!.begin(session, stream, {
        previous: await heads.get(session, stream),
      });
      await b.send({ n: 'b1' });
      // The zombie finishes after the takeover; its finished head is written last.
      await a.finish({ n: 'a-final' });
      expect((await heads.get(session, stream))?.terminal).toBeDefined();
      const decided = await heads.decided(session, stream);
      expect(decided).toMatchObject({ generation: b.generation, terminal: undefined });
      // A redelivery runs it on as the next generation after the newer one.
      const c = await workerA!.begin(session, stream, { previous: decided });
      expect(c.generation.attempt).toBe(3);
      await c.finish({ n: 'c-final' });
      expect(await heads.decided(session, stream)).toMatchObject({
        generation: c.generation,
        terminal: { payload: { n: 'c-final' } },
      });

      // A finished head whose records are contiguous is trusted without a read; one whose
      // generation won its fold too, interleaved with other sessions' records.
      const other = newSessionId();
      const lone = await workerA!.begin(session, requestStreamId('call-9'), {
        previous: undefined,
      });
      const noise = await workerB!.begin(other, requestStreamId('call-1'), { previous: undefined });
      await lone.send({ n: 1 });
      await noise.send({ n: 1 });
      await lone.finish({ n: 'done' });
      expect(await heads.decided(session, requestStreamId('call-9'))).toMatchObject({
        generation: lone.generation,
        terminal: { payload: { n: 'done' } },
      });
    });

    it('keeps an index, not the values: lookups past a one-entry cache, rewrites, tombstones and compaction stay right', async () => {
      const { port, topics, compact } = await subject();
      const names = await topics(1);
      const stores = { port, topics: names, partitionCount: 1, cacheEntries: 1 };
      const writer = new SessionStore(stores);
      const reader = new SessionStore(stores);
      const ids = Array.from({ length: 20 }, () => newSessionId());
      const record = (i: number, version = `v${i}`) => ({
        id: ids[i]!,
        protocolVersion: version,
        initialize: { n: i },
        createdAtMs: i,
      });
      for (const i of ids.keys()) await writer.create(record(i));
      for (const [i, id] of ids.entries())
        expect((await reader.get(id))?.protocolVersion).toBe(`v${i}`);
      // The reader has ids[3] in its index; its record is then tombstoned, and compaction removes
      // both the record and the tombstone: the index points at nothing, and the lookup says so.
      await writer.create(record(0, 'again'));
      await writer.endMany(0, [ids[1]!, ids[3]!]);
      await writer.create(record(2, 'last'));
      await compact?.(names.sessions, 0);
      expect((await reader.get(ids[0]!))?.protocolVersion).toBe('again');
      expect(await reader.get(ids[1]!)).toBeUndefined();
      expect(await reader.get(ids[3]!)).toBeUndefined();
      expect((await reader.get(ids[2]!))?.protocolVersion).toBe('last');
      for (let i = 4; i < ids.length; i++)
        expect((await reader.get(ids[i]!))?.protocolVersion).toBe(`v${i}`);
      expect([...reader.entries(0)].map(([key]) => key).sort()).toEqual(
        ids.filter((_, i) => i !== 1 && i !== 3).sort(),
      );
      // A process reading the table from scratch holds the live keys only.
      const fresh = new SessionStore(stores);
      await fresh.catchUp(0);
      expect([...fresh.entries(0)]).toHaveLength(18);
    });

    it('reads a record another replica just wrote with its catch-up: no second read of the log', async () => {
      const { port, topics } = await subject();
      const names = await topics(1);
      const { port: counted, counter } = countingFetches(port);
      const writer = new SessionStore({ port, topics: names, partitionCount: 1 });
      const reader = new SessionStore({ port: counted, topics: names, partitionCount: 1 });
      await reader.catchUp(0);
      const ids = Array.from({ length: 5 }, () => newSessionId());
      for (const [i, id] of ids.entries())
        await writer.create({ id, protocolVersion: `v${i}`, initialize: {}, createdAtMs: i });
      counter.fetches = 0;
      const read = await Promise.all(ids.map((id) => reader.get(id)));
      expect(read.map((r) => r?.protocolVersion)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
      expect(counter.fetches).toBe(1); // the catch-up, shared by the five lookups
    });

    it('keeps sessions any replica can read, and ends them everywhere', async () => {
      const { port, topics } = await subject();
      const names = await topics(3);
      const replicaA = new SessionStore({ port, topics: names, partitionCount: 3 });
      const replicaB = new SessionStore({ port, topics: names, partitionCount: 3 });
      const id = newSessionId();
      expect(await replicaB.get(id)).toBeUndefined();
      await replicaA.create({
        id,
        protocolVersion: '2025-11-25',
        initialize: { method: 'initialize' },
        createdAtMs: 1,
      });
      expect(await replicaB.get(id)).toMatchObject({ id, protocolVersion: '2025-11-25' });
      // A gateway keeps less of it in memory: the version and subject, not the initialize.
      const lean = new SessionStore({
        port,
        topics: names,
        partitionCount: 3,
        withInitialize: false,
      });
      expect(await lean.get(id)).toMatchObject({ id, protocolVersion: '2025-11-25' });
      expect((await lean.get(id))?.initialize).toBeUndefined();
      expect((await replicaB.get(id))?.initialize).toEqual({ method: 'initialize' });
      await replicaA.end(id);
      expect(await replicaB.get(id)).toBeUndefined();
      expect(await replicaA.get(id)).toBeUndefined();
    });

    it("journals a step's tries between two of them, then its outcome in their place, readable on another replica", async () => {
      const { port, topics } = await subject();
      const names = await topics(2);
      const session = newSessionId();
      const stream = requestStreamId(7);
      const options = { port, topics: names, partitionCount: 2 };
      const worker = new StepJournal(options);
      const error = { name: 'Error', message: 'the receipt service is unavailable' };
      const retrying = { attempts: 2, nextAtMs: 1_700_000_000_000, error };
      await worker.put(session, stream, 'receipt', { retrying, generation: 'e.1', atMs: 1 });
      const next = await new StepJournal(options).get(session, stream, 'receipt');
      expect(next).toEqual({ retrying, generation: 'e.1', atMs: 1 });
      expect(isStepOutcome(next!)).toBe(false);
      const outcome = { ok: true as const, value: { id: 'em_1' } };
      const done = { outcome, generation: 'e.2', atMs: 2, durationMs: 3, attempts: 3 };
      await worker.put(session, stream, 'receipt', done);
      const replica = new StepJournal(options);
      expect(await replica.get(session, stream, 'receipt')).toEqual(done);
      expect(await replica.list(session, stream)).toEqual([{ step: 'receipt', ...done }]);
    });
  });
}
