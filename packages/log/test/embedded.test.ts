import { EmbeddedLog } from '@tidemark/embedded-log';
import { TOPIC_CLEANUP, TOPIC_ROLES, topicNames } from '@tidemark/protocol';
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
      for (const role of TOPIC_ROLES)
        port.createTopic({ name: names[role], partitions, cleanup: TOPIC_CLEANUP[role] });
      return Promise.resolve(names);
    },
    compact: async (topic, partition) => {
      await port.compact(topic, partition);
    },
  });
});
