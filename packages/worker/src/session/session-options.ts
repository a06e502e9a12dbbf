import type { SessionId } from '@tidemark/protocol';

/** What one session on a worker is, beyond the environment every call runs in. */
export interface SessionRuntimeOptions {
  readonly session: SessionId;
  /** The authenticated subject the session is bound to, if any. */
  readonly subject?: string | undefined;
  /** Calls of this session running at once; more are answered with an error at once. */
  readonly maxConcurrentCalls: number;
}
