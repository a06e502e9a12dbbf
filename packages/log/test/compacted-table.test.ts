import { EmbeddedLog } from '@tidemark/embedded-log';
import { topicNames, type LogPort } from '@tidemark/protocol';
import { describe, expect, it, onTestFinished } from 'vitest';
import { CompactedTable } from '../src/index.js';

describe('CompactedTable: the values its catch-up keeps', () => {
  it('keeps a copy of each record’s bytes, not the fetched batch they are a view of', async () => {
    const log = new EmbeddedLog({ path: ':memory:' });
    onTestFinished(() => log.close());
    const names = topicNames('t.');
    log.provisionTopics(names, { partitions: 1 });
    await log.append(names.sessions, [
      { partition: 0, key: 'a', value: new TextEncoder().encode('"one"'), headers: [] },
    ]);
    // As the Kafka client hands them over: each value a Buffer view into the whole fetch response.
    const batch = Buffer.alloc(1024 * 1024);
    const fetch: LogPort['fetch'] = async (...args) => {
      const result = await log.fetch(...args);
      return {
        ...result,
        records: result.records.map((record) => {
          if (record.value === null) return record;
          batch.set(record.value, 512);
          return { ...record, value: batch.subarray(512, 512 + record.value.length) };
        }),
      };
    };
    const port = new Proxy(log, {
      get: (target, name) => {
        if (name === 'fetch') return fetch;
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? (value.bind(target) as unknown) : value;
      },
    });
    const seen: Uint8Array[] = [];
    const table = new CompactedTable<string>({
      port,
      topic: names.sessions,
      decode: (value) => (seen.push(value), JSON.parse(new TextDecoder().decode(value)) as string),
      encode: (value) => new TextEncoder().encode(JSON.stringify(value)),
    });
    expect(await table.get(0, 'a')).toBe('one');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.buffer.byteLength).toBe(seen[0]!.length);
  });
});
