import { AsyncLocalStorage } from 'node:async_hooks';
import type { Generation } from '@tidemark/protocol';

/** What a running tool can know of its execution: which generation of which stream it is. */
export interface Execution {
  readonly sessionId: string;
  readonly stream: string;
  readonly generation: Generation;
  /** The generation's attempt: 1 for the first execution, higher after a retry or a takeover. */
  readonly attempt: number;
  /** The authenticated subject the session is bound to, when the gateway authenticates. */
  readonly subject?: string;
}

const storage = new AsyncLocalStorage<Execution>();

/** The execution of the tool call running now, inside a tool callback; undefined elsewhere. */
export function currentExecution(): Execution | undefined {
  return storage.getStore();
}

/** @internal */
export function runInExecution<T>(execution: Execution, fn: () => T): T {
  return storage.run(execution, fn);
}
