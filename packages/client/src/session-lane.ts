// The session lane (2025-03-26 … 2025-11-25) with the official SDK client: what to do with
// Tidemark's `notifications/tidemark/reset`, and progress an application can trust.

/** What a reset says: why the stream starts over, and the generation that follows. */
export interface ResetNotice {
  readonly reason: string;
  readonly generation?: string;
}

/** The part of the SDK's `Client` (v2, or v1's `Client`) this needs: its fallback handler. */
export interface NotificationHost<N extends { method: string; params?: unknown }> {
  fallbackNotificationHandler?: ((notification: N) => Promise<void>) | undefined;
}

/**
 * Calls `onReset` on each `notifications/tidemark/reset`: the application must discard what it
 * accumulated for the call (partial output, progress) — what follows is another execution, or the
 * events it missed are gone. Other notifications still reach the handler that was there before.
 */
export function onReset<N extends { method: string; params?: unknown }>(
  client: NotificationHost<N>,
  handler: (reset: ResetNotice) => void,
): void {
  const previous = client.fallbackNotificationHandler;
  client.fallbackNotificationHandler = async (notification: N) => {
    if (notification.method === 'notifications/tidemark/reset') {
      const params = (notification.params ?? {}) as { reason?: unknown; generation?: unknown };
      handler({
        reason: typeof params.reason === 'string' ? params.reason : 'unknown',
        ...(typeof params.generation === 'string' ? { generation: params.generation } : {}),
      });
      return;
    }
    await previous?.(notification);
  };
}

/**
 * Wraps an `onprogress` callback so the application only ever sees progress increase, as the spec
 * requires: Tidemark continues a re-run's numbering past the earlier execution's, and this drops
 * the rest (a server that restarts its count, or a reset after the log lost the earlier events).
 */
export function increasingProgress<P extends { progress: number }>(
  onprogress: (progress: P) => void,
): (progress: P) => void {
  let last = -Infinity;
  return (progress) => {
    if (progress.progress <= last) return;
    last = progress.progress;
    onprogress(progress);
  };
}
