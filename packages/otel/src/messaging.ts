import { context, SpanKind, type Attributes, type Context, type Span } from '@opentelemetry/api';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_KAFKA_OFFSET,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
} from './semconv.js';
import { tidemarkTracer } from './trace.js';

/** One hop of a record through the log, as the messaging semantic conventions name it. */
export interface MessagingHop {
  /** `messaging.system`: the log in use (`LogPort.kind`: `kafka`, `embedded`). */
  readonly system: string;
  /** send: a produce; receive: a reader got the record; process: a consumer acts on it. */
  readonly operation: 'send' | 'receive' | 'process';
  readonly topic: string;
  readonly partition: number;
  /** The record's offset, when known at the start (a produce learns it later). */
  readonly offset?: bigint;
  /** The span's name; default `<operation> <topic>`. */
  readonly name?: string;
  /** More attributes (the MCP method, the session). */
  readonly attributes?: Attributes;
}

/**
 * Starts the span of one messaging hop: a producer span for `send`, a consumer span for `receive`
 * and `process`, with the destination, partition and offset attributes every hop carries.
 */
export function startMessagingSpan(hop: MessagingHop, parent: Context = context.active()): Span {
  return tidemarkTracer().startSpan(
    hop.name ?? `${hop.operation} ${hop.topic}`,
    {
      kind: hop.operation === 'send' ? SpanKind.PRODUCER : SpanKind.CONSUMER,
      attributes: {
        [ATTR_MESSAGING_SYSTEM]: hop.system,
        [ATTR_MESSAGING_OPERATION_TYPE]: hop.operation,
        [ATTR_MESSAGING_DESTINATION_NAME]: hop.topic,
        [ATTR_MESSAGING_DESTINATION_PARTITION_ID]: String(hop.partition),
        ...(hop.offset === undefined ? {} : { [ATTR_MESSAGING_KAFKA_OFFSET]: Number(hop.offset) }),
        ...hop.attributes,
      },
    },
    parent,
  );
}
