import { randomBytes } from 'node:crypto';
import { EmbeddedLog } from '@tidemark/embedded-log';
import {
  checkSealedRecord,
  createKeyring,
  decodeRequestRecord,
  newSessionId,
  partitionForSession,
  SEAL_HEADER,
  topicNames,
  type LogRecord,
} from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readRange, RequestWriter } from '../src/index.js';

const PARTITIONS = 4;
const keyring = createKeyring({ current: { id: 1, secret: randomBytes(32) } });

function requestsLog() {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  const names = topicNames('w.');
  log.provisionTopics(names, { partitions: PARTITIONS });
  return { log, topic: names.requests };
}

async function all(log: EmbeddedLog, topic: string, partition: number): Promise<LogRecord[]> {
  const { highWatermark: end } = await log.offsets(topic, partition);
  const read: LogRecord[] = [];
  for await (const record of readRange(log, topic, partition, { from: 0n, until: end }))
    read.push(record);
  return read;
}

describe('RequestWriter: the one writer to requests', () => {
  it("writes a key's records in order to its session's partition, sealed, carrying the trace headers passed", async () => {
    const { log, topic } = requestsLog();
    const writer = new RequestWriter({ log, topic, partitionCount: PARTITIONS, keyring });
    const session = newSessionId();
    const partition = partitionForSession(session, PARTITIONS);
    const message = (id: number) => ({ jsonrpc: '2.0' as const, id, method: 'ping' });
    await writer.write(
      session,
      [1, 2].map((id) => ({ lane: 'session' as const, session, message: message(id) })),
      [['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01']],
    );

    expect(writer.partitionOf(session)).toBe(partition);
    const records = await all(log, topic, partition);
    expect(records.map((record) => decodeRequestRecord(record))).toMatchObject([
      { ok: true, record: { lane: 'session', session, message: message(1) } },
      { ok: true, record: { lane: 'session', session, message: message(2) } },
    ]);
    for (const record of records) {
      expect(checkSealedRecord(keyring, record)).toMatchObject({ ok: true });
      expect(record.headers).toContainEqual([
        'traceparent',
        '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      ]);
    }
  });

  it('touch: one sealed control record per session, each on its own partition; none for none', async () => {
    const { log, topic } = requestsLog();
    const writer = new RequestWriter({ log, topic, partitionCount: PARTITIONS, keyring });
    await writer.touch([]);
    for (let partition = 0; partition < PARTITIONS; partition++)
      expect((await log.offsets(topic, partition)).highWatermark).toBe(0n);
    const sessions = [newSessionId(), newSessionId()];
    await writer.touch(sessions);
    for (const session of sessions) {
      const [record] = (await all(log, topic, partitionForSession(session, PARTITIONS))).filter(
        (r) => r.key === session,
      );
      expect(decodeRequestRecord(record!)).toMatchObject({
        ok: true,
        record: { lane: 'control', session },
      });
      expect(checkSealedRecord(keyring, record!)).toMatchObject({ ok: true });
    }
  });

  it('without a keyring (a worker that verifies nothing, in development) records go unsealed', async () => {
    const { log, topic } = requestsLog();
    const writer = new RequestWriter({
      log,
      topic,
      partitionCount: PARTITIONS,
      keyring: undefined,
    });
    const session = newSessionId();
    await writer.write(session, [
      { lane: 'session', session, message: { jsonrpc: '2.0', id: 1, method: 'ping' } },
    ]);
    const [record] = await all(log, topic, writer.partitionOf(session));
    expect(record!.headers.map(([name]) => name)).not.toContain(SEAL_HEADER);
  });
});
