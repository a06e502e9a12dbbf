import { describeLogPortContract } from '@tidemark/kafka-fixtures';
import { onTestFinished } from 'vitest';
import { EmbeddedLog } from '../src/index.js';

let topics = 0;

describeLogPortContract('embedded (in memory)', () => {
  const log = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => log.close());
  return Promise.resolve({
    port: log,
    createTopic: ({ partitions, compacted }) => {
      const name = `t${topics++}`;
      log.createTopic({ name, partitions, cleanup: compacted === true ? 'compact' : 'delete' });
      return Promise.resolve(name);
    },
    compactUntil: async (topic, partition, done) => {
      await log.compact(topic, partition);
      if (!(await done())) throw new Error('embedded compaction did not converge');
    },
  });
});
