import { ProtocolError } from '@modelcontextprotocol/server';
import { JsonRpcErrorCodes } from '@tidemark/protocol';

/**
 * The event streams each subject reads by polls and push streams on this process, each until its
 * lease ends: a subject may read at most `max` at once. Every stream read keeps its source running
 * for a lease, so without a bound one subject naming new arguments (ticks every 10, 11, 12… ms)
 * starts a source each time (security review M5). A stream the subject already reads is always
 * admitted; the others' streams are not counted against it.
 */
export class EventStreamReaders {
  private readonly bySubject = new Map<string, Map<string, number>>();

  constructor(private readonly max: number) {}

  /** Admits `subject` to `stream` until `untilMs`, or throws the refusal it is answered with. */
  admit(subject: string, stream: string, untilMs: number, nowMs: number): void {
    let streams = this.bySubject.get(subject);
    if (streams === undefined) this.bySubject.set(subject, (streams = new Map<string, number>()));
    if (!streams.has(stream)) {
      for (const [other, until] of streams) if (until <= nowMs) streams.delete(other);
      if (streams.size >= this.max)
        throw new ProtocolError(
          JsonRpcErrorCodes.invalidRequest,
          `this subject reads ${this.max} event streams, the most it may at once; a stream not read for a lease (its poller stopped) frees its place`,
        );
    }
    streams.set(stream, untilMs);
    if (this.bySubject.size > 10_000) this.forgetIdle(nowMs);
  }

  private forgetIdle(nowMs: number): void {
    for (const [subject, streams] of this.bySubject) {
      for (const [stream, until] of streams) if (until <= nowMs) streams.delete(stream);
      if (streams.size === 0) this.bySubject.delete(subject);
    }
  }
}
