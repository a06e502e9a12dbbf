import type { ProvidedKafka } from '@tidemark/testing';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging
  export interface ProvidedContext extends ProvidedKafka {}
}
