/** What a tool call answers: the SDK's `CallToolResult` shape, as JSON. */
export type ToolResult = Record<string, unknown> & { content?: unknown[]; isError?: boolean };

/** A task as `tasks/get` reports it (the extension's DetailedTask). */
export interface TaskView {
  readonly taskId: string;
  readonly status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  readonly statusMessage?: string;
  readonly createdAt: string;
  readonly lastUpdatedAt: string;
  readonly ttlMs: number | null;
  readonly pollIntervalMs?: number;
  readonly inputRequests?: Record<string, unknown>;
  readonly result?: ToolResult;
  readonly error?: { code?: unknown; message?: unknown; data?: unknown };
}
