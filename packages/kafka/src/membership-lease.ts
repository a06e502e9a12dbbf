/**
 * How long a group member may go on acting for its partitions without hearing from the group.
 *
 * The broker drops a member whose heartbeats stop (a network partition: the member runs on, its
 * packets go nowhere) a session timeout after the last one it received, and gives its partitions
 * to other members, which start their calls again. A member that is not told — it cannot be, it
 * is cut off — would go on reading those partitions the moment the network heals, until its next
 * heartbeat hears that it was fenced: and in that window it starts calls the new owner starts too.
 *
 * So the member keeps a lease: the send time of the last heartbeat the group answered, plus the
 * session timeout. The broker heard that heartbeat no earlier than it was sent, so the lease never
 * outlasts the member's place in the group; when it lapses the member stops its partitions itself
 * (`onChange(true)`), and takes them up again only when a heartbeat is answered (`onChange(false)`:
 * the group still had it — a slow coordinator, not a partition) or it joins again.
 */
export class MembershipLease {
  private confirmedAtMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lapsedNow = false;
  private stopped = false;

  constructor(
    private readonly sessionTimeoutMs: number,
    private readonly onChange: (lapsed: boolean) => void,
  ) {}

  /** Whether the lease ran out: the member may have been dropped from the group. */
  get lapsed(): boolean {
    return this.lapsedNow;
  }

  /** The group answered a heartbeat (or a join) sent at `sentAtMs`: it had this member then. */
  confirm(sentAtMs: number): void {
    if (this.stopped) return;
    // Answers may come out of order (a retried heartbeat): the lease follows the latest send.
    if (this.confirmedAtMs !== undefined && sentAtMs <= this.confirmedAtMs && !this.lapsedNow)
      return;
    this.confirmedAtMs = Math.max(sentAtMs, this.confirmedAtMs ?? sentAtMs);
    clearTimeout(this.timer);
    const leftMs = this.confirmedAtMs + this.sessionTimeoutMs - Date.now();
    this.timer = setTimeout(() => this.lapse(), Math.max(0, leftMs));
    this.timer.unref();
    if (this.lapsedNow && leftMs > 0) {
      this.lapsedNow = false;
      this.onChange(false);
    }
  }

  /** No more lapses: the member leaves (or left) the group. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private lapse(): void {
    if (this.stopped || this.lapsedNow) return;
    this.lapsedNow = true;
    this.onChange(true);
  }
}
