import type { Caller, PartitionKey, StreamId } from '@tidemark/protocol';

/** Whose call it is: the key its stream is under, the stream, and the subject it runs for. */
export interface CallOwner {
  /** The call's session, or its stateless request's routing key, or its task's id. */
  readonly owner: PartitionKey;
  readonly stream: StreamId;
  /** The subject the gateway authenticated, if it authenticates. */
  readonly subject?: string | undefined;
  /** What the request's credential said beside the subject: its OAuth client and scopes. */
  readonly caller?: Caller | undefined;
  /** The call came with an `Idempotency-Key` (its audit record says so). */
  readonly idempotent?: boolean | undefined;
}
