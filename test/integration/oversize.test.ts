import counting from '@tidemark/examples/counting';
import { it, onTestFinished } from 'vitest';
import { embeddedStack } from '../support/embedded-stack.js';
import { bigTool, tooLargeAnswersAreErrors } from '../support/oversize.js';

it('an answer too large for one record is an error naming its size and the limit, on either lane (embedded log)', async () => {
  const stack = await embeddedStack({ modules: [bigTool, counting] });
  onTestFinished(() => stack.stop());
  await tooLargeAnswersAreErrors(stack.gateways[0]!.url, stack.worker);
});
