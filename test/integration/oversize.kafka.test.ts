import counting from '@tidemark/examples/counting';
import { KafkaLog } from '@tidemark/kafka';
import { inject, it, onTestFinished } from 'vitest';
import { startLogStack } from '@tidemark/fixtures/log-stack';
import {
  bigTool,
  largeAnswersArriveWhole,
  largeRequestsAreCarried,
  largeTaskResultsArriveWhole,
} from '../support/oversize.js';
import { provisionTestTopics } from '@tidemark/fixtures/topics';

it('a 10 MiB answer arrives whole on either lane, after a resume on another gateway and as a task’s outcome, as does a 4 MiB request; past 16 MiB it is an error naming its size and the limit (Kafka: 4 MiB records)', async (ctx) => {
  const brokers = inject('kafkaBrokers');
  const { names } = await provisionTestTopics(ctx, brokers, { label: 'oversize', partitions: 2 });
  const stack = await startLogStack(new KafkaLog({ brokers: [...brokers] }), names, [
    bigTool,
    counting,
  ]);
  onTestFinished(() => stack.stop());
  await largeAnswersArriveWhole(stack.urls, stack.worker);
  await largeTaskResultsArriveWhole(stack.urls);
  await largeRequestsAreCarried(stack.urls[0]!);
});
