import { EmbeddedLog } from '@tidemark/embedded-log';
import { onTestFinished } from 'vitest';
import { describeOccurrencePolling } from './occurrence-suite.js';

describeOccurrencePolling('the embedded log', (partitions) => {
  const port = new EmbeddedLog({ path: ':memory:' });
  onTestFinished(() => port.close());
  port.createTopic({ name: 'occurrences', partitions });
  return Promise.resolve({ port, topic: 'occurrences' });
});
