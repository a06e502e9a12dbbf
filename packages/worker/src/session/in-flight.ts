import { context } from '@opentelemetry/api';
import type { JSONRPCMessage, TransportSendOptions } from '@modelcontextprotocol/server';
import { requestStreamId, type RequestId, type SessionId, type StreamId } from '@tidemark/protocol';
import { currentExecution } from '@tidemark/tools';
import type { Call } from '../calls/index.js';
import type { CallExecution } from '../execution/index.js';
import type { Request } from './delivery.js';

/**
 * A call of a session on this worker, from its start to its end here: its slot and span (`call`),
 * its execution, and the request it runs — run again when it wakes from a sleep (`ex.sleep`).
 */
export class InFlight {
  private ended = false;
  /** Aborted when the call ends here: a sleep stops waiting. */
  private readonly ending = new AbortController();

  constructor(
    readonly stream: StreamId,
    readonly call: Call,
    readonly run: CallExecution,
    readonly request: Request,
  ) {}

  /** Whether the call ended here (answered, cancelled, or stopped): nothing more of it goes out. */
  get closed(): boolean {
    return this.ended;
  }

  close(): void {
    this.ended = true;
    this.ending.abort();
  }

  /**
   * The tool went to sleep (or waits for a signal: its answer wakes it sooner): the call gives its
   * slot back until `wakeAtMs`, then `wake` runs its
   * request again, in the call's trace — unless it ended meanwhile (cancelled, or its partition
   * moved: the next owner wakes it from the journal).
   */
  rest(wakeAtMs: number, wake: (request: Request) => void): void {
    void this.call.idle(this.run.untilWoken(wakeAtMs, this.ending.signal)).then((woke) => {
      if (woke && !this.ended) context.with(this.call.context, () => wake(this.request));
    });
  }
}

/** A response (a result or an error) rather than a request or a notification. */
export function isResponse(message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } {
  return 'id' in message && !('method' in message) && ('result' in message || 'error' in message);
}

/**
 * The call a message the server sends belongs to: the request it names — or, named by none (e.g.
 * `ctx.mcpReq.elicitInput` in SDK v2), the call it is sent from, as the execution context says.
 */
export function relatedStream(
  session: SessionId,
  options: TransportSendOptions | undefined,
): StreamId | undefined {
  if (options?.relatedRequestId !== undefined) return requestStreamId(options.relatedRequestId);
  const execution = currentExecution();
  return execution?.sessionId === session ? (execution.stream as StreamId) : undefined;
}
