import counting from '@tidemark/examples/counting';
import { it, onTestFinished } from 'vitest';
import { embeddedStack } from '@tidemark/fixtures/embedded-stack';
import {
  bigTool,
  largeAnswersArriveWhole,
  largeRequestsAreCarried,
  largeTaskResultsArriveWhole,
} from '../support/oversize.js';

it('a 10 MiB answer arrives whole on either lane, after a resume on another gateway and as a task’s outcome, as does a 4 MiB request; past 16 MiB it is an error naming its size and the limit (embedded log)', async () => {
  const stack = await embeddedStack({ modules: [bigTool, counting], replicas: 2 });
  onTestFinished(() => stack.stop());
  const urls = stack.gateways.map((g) => g.url);
  await largeAnswersArriveWhole(urls, stack.worker);
  await largeTaskResultsArriveWhole(urls);
  await largeRequestsAreCarried(urls[0]!);
});
