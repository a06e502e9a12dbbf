import type { LogPort, PartitionOffsets } from '@tidemark/protocol';

/**
 * The offsets of `events` partitions, read for many callers at once. A caller's answer comes from
 * a request sent after it asked — as new as anything it read before asking, which the resume
 * decision needs (the high watermark is read after the head) — and every caller that asks before
 * that request goes out shares it: thousands of clients resuming at once cost a request per
 * partition per turn of the event loop, not one each.
 */
export class OffsetsReader {
  private readonly next = new Map<number, Promise<PartitionOffsets>>();

  constructor(
    private readonly port: LogPort,
    private readonly topic: string,
  ) {}

  read(partition: number): Promise<PartitionOffsets> {
    let answer = this.next.get(partition);
    if (answer === undefined) {
      answer = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        // Sent now: whoever asks from here on waits for the next request.
        this.next.delete(partition);
        return this.port.offsets(this.topic, partition);
      });
      this.next.set(partition, answer);
    }
    return answer;
  }
}
