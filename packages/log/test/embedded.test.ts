import { EmbeddedLog } from '@tidemark/embedded-log';
import { topicNames } from '@tidemark/protocol';
import { onTestFinished } from 'vitest';
import { describeLogComponents } from './log-suite.js';

let prefixes = 0;

describeLogComponents('the embedded log', () => {
  const port = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => port.close());
  return Promise.resolve({
    port,
    topics: (partitions) => {
      const names = topicNames(`t${prefixes++}.`);
      port.provisionTopics(names, { partitions });
      return Promise.resolve(names);
    },
    compact: async (topic, partition) => {
      await port.compact(topic, partition);
    },
  });
});
