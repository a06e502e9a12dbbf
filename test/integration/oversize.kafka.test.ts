import counting from '@tidemark/examples/counting';
import { KafkaLog } from '@tidemark/kafka';
import { inject, it, onTestFinished } from 'vitest';
import { startLogStack } from '../support/log-stack.js';
import { bigTool, tooLargeAnswersAreErrors } from '../support/oversize.js';
import { provisionTestTopics } from '../support/topics.js';

it('an answer too large for one record is an error naming its size and the limit, on either lane (Kafka: the session lane retried its write forever)', async (ctx) => {
  const brokers = inject('kafkaBrokers');
  const { names } = await provisionTestTopics(ctx, brokers, { label: 'oversize', partitions: 2 });
  const stack = await startLogStack(new KafkaLog({ brokers: [...brokers] }), names, [
    bigTool,
    counting,
  ]);
  onTestFinished(() => stack.stop());
  await tooLargeAnswersAreErrors(stack.url, stack.worker);
});
