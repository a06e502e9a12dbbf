import type { JSONRPCRequest, MessageClassification } from '@modelcontextprotocol/server';
import type { IdempotencyClaim, SessionRecord } from '@tidemark/log';
import type { Caller, RoutingKey, TaskMode } from '@tidemark/protocol';

/**
 * One stateless request as its lane hands it over — what arrived, and the call slot it holds — to
 * the exchange that runs it and the task it may become (both import it from here, not each other).
 * Everything else they run with is the lane's (`LaneContext`, its `environment`).
 */
export interface StatelessRequest {
  /** The request's routing key (it has no session). */
  readonly key: RoutingKey;
  readonly message: JSONRPCRequest;
  /** The subject the gateway authenticated, if it authenticates. */
  readonly subject?: string | undefined;
  /** What its credential said beside the subject (OAuth client, scopes). */
  readonly caller?: Caller | undefined;
  /** The gateway's classification of the request, which binds the server to its revision. */
  readonly classification: MessageClassification;
  /** The gateway's `--tasks`: whether a `tools/call` may become a task. */
  readonly mode: TaskMode;
  /**
   * A keyed call's claim (an idempotency key): written while it runs, in the log before its
   * answer; with the key's record as it was read to decide it (none: undefined).
   */
  readonly claim?:
    (IdempotencyClaim & { readonly record?: SessionRecord | null | undefined }) | undefined;
  /**
   * The request is dispatched again at its task's wake time (`ex.sleep`): its next generation is a
   * wake, not a takeover, and does not count toward the poison-call bound; `progress` is the
   * highest progress it wrote before it slept.
   */
  readonly woken?: { readonly progress: number } | undefined;
  /** Runs a wait for the client (a task's input) without holding a call slot. */
  readonly idle?: (<T>(waiting: Promise<T>) => Promise<T>) | undefined;
  /** The request became a task: from a call slot to a task slot (see `Call.asTask`). */
  readonly asTask?: (() => Promise<void>) | undefined;
}
