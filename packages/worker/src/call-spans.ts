import type { Span } from '@opentelemetry/api';

/** The span of each call in flight, by its request's partition and offset; ended when it is terminal. */
export class CallSpans {
  private readonly byPartition = new Map<number, Map<bigint, Span>>();

  set(partition: number, offset: bigint, span: Span): void {
    const spans = this.byPartition.get(partition) ?? new Map<bigint, Span>();
    this.byPartition.set(partition, spans.set(offset, span));
  }

  end(partition: number, offset: bigint): void {
    const spans = this.byPartition.get(partition);
    spans?.get(offset)?.end();
    spans?.delete(offset);
    if (spans?.size === 0) this.byPartition.delete(partition);
  }

  /** The partition went to another worker: its calls' spans end here. */
  endPartition(partition: number): void {
    for (const span of this.byPartition.get(partition)?.values() ?? []) span.end();
    this.byPartition.delete(partition);
  }
}
