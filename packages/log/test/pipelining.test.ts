import { EmbeddedLog } from '@tidemark/embedded-log';
import {
  decodeStamp,
  newSessionId,
  newWorkerEpoch,
  requestStreamId,
  topicNames,
  type AppendRecord,
  type LogPort,
} from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { StreamWriter } from '../src/index.js';

/** The embedded log, with the appends of `events` failing while `failing` is set. */
function flakyLog() {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  const names = topicNames('p.');
  log.provisionTopics(names, { partitions: 1 });
  const state = { failing: false };
  const port = new Proxy(log, {
    get(target, key, receiver) {
      if (key === 'append')
        return (topic: string, records: readonly AppendRecord[]) =>
          state.failing && topic === names.events
            ? Promise.reject(new Error('broker unavailable'))
            : target.append(topic, records);
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  }) as LogPort;
  return { log, port, names, state };
}

describe('pipelined writes', () => {
  it('queue in order without waiting, and all land in order', async () => {
    const { port, names } = flakyLog();
    const writer = new StreamWriter({
      port,
      topics: names,
      epoch: newWorkerEpoch(),
      partitionCount: 1,
    });
    const execution = await writer.begin(newSessionId(), requestStreamId(1), {
      previous: undefined,
    });
    const sends = Array.from({ length: 50 }, (_, i) => execution.send({ i }));
    expect(execution.unacknowledged).toBe(50);
    await execution.finish({ done: true });
    await Promise.all(sends);
    expect(execution.unacknowledged).toBe(0);
    const { records } = await port.fetch(names.events, 0, 0n);
    const seqs = records.flatMap((r) => {
      const stamp = decodeStamp(r.headers);
      return stamp.ok ? [stamp.stamp.seq] : [];
    });
    expect(seqs).toEqual(Array.from({ length: 52 }, (_, i) => i)); // start (0), 1..50, terminal
  });

  it('a failed write fails what was queued behind it: no record lands after a hole', async () => {
    const { port, names, state } = flakyLog();
    const writer = new StreamWriter({
      port,
      topics: names,
      epoch: newWorkerEpoch(),
      partitionCount: 1,
    });
    const execution = await writer.begin(newSessionId(), requestStreamId(1), {
      previous: undefined,
    });
    await execution.send({ i: 1 });
    state.failing = true;
    const failed = execution.send({ i: 2 }); // in flight when the broker goes away
    state.failing = false;
    const behind = [execution.send({ i: 3 }), execution.finish({ done: true })];
    await expect(failed).rejects.toThrow('broker unavailable');
    for (const p of behind) await expect(p).rejects.toThrow();
    // The generation is poisoned: later writes are refused.
    await expect(execution.send({ i: 4 })).rejects.toThrow(/failed to write earlier/);
    const { records } = await port.fetch(names.events, 0, 0n);
    expect(
      records.map((r) =>
        r.value === null ? null : (JSON.parse(Buffer.from(r.value).toString()) as unknown),
      ),
    ).toEqual([null, { i: 1 }]);
  });
});
