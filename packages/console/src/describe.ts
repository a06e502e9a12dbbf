import {
  createdTask,
  foldTask,
  taskEventOf,
  type RecordKind,
  type TaskStatus,
  type TaskStreamRecord,
} from '@tidemark/protocol';

// Records and headers in words for the pages: short, and never the whole payload (a tool's result
// can be megabytes; the console shows what happened, the client has the data).

const MAX_SUMMARY = 160;

interface JsonRpcish {
  method?: unknown;
  params?: {
    progress?: unknown;
    total?: unknown;
    message?: unknown;
    level?: unknown;
    data?: unknown;
  };
  result?: { isError?: unknown; content?: unknown };
  error?: { code?: unknown; message?: unknown };
}

/** One line for a record of a stream. */
export function describeMessage(kind: RecordKind, payload: unknown): string {
  if (kind === 'generation-start') return 'generation starts';
  const message = (payload ?? {}) as JsonRpcish;
  if (message.method === 'notifications/progress') {
    const { progress, total, message: text } = message.params ?? {};
    const of = typeof total === 'number' ? `/${total}` : '';
    return clip(
      `progress ${typeof progress === 'number' ? progress : '?'}${of}${typeof text === 'string' ? ` — ${text}` : ''}`,
    );
  }
  if (typeof message.method === 'string') return clip(message.method);
  if (message.error !== undefined)
    return clip(`error ${String(message.error.code)}: ${String(message.error.message)}`);
  if (message.result !== undefined)
    return clip(
      `${message.result.isError === true ? 'tool error' : 'result'}: ${textOf(message.result)}`,
    );
  return kind === 'terminal' ? 'end of stream' : 'message';
}

/** The trace id of a W3C `traceparent` header, when there is one. */
export function traceIdOf(headers: ReadonlyArray<readonly [string, string]>): string | undefined {
  const parent = headers.find(([name]) => name === 'traceparent')?.[1];
  const match =
    parent === undefined
      ? null
      : /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(parent);
  return match === null || /^0+$/.test(match[1]!) ? undefined : match[1];
}

/** A task's statuses in the order it went through them. */
export interface TaskHistory {
  readonly status: TaskStatus;
  readonly changes: ReadonlyArray<{
    readonly status: TaskStatus;
    readonly atMs: number;
    readonly note: string;
  }>;
}

/** Folds a task's stream the way `tasks/get` does, keeping each status change. */
export function taskHistoryOf(
  createdAtMs: number,
  records: readonly TaskStreamRecord[],
): TaskHistory {
  let state = createdTask('task', { atMs: createdAtMs, ttlMs: null });
  const changes: Array<TaskHistory['changes'][number]> = [
    { status: state.status, atMs: createdAtMs, note: 'created' },
  ];
  for (const record of records) {
    const event = taskEventOf(record);
    if (event === undefined) continue;
    const folded = foldTask('task', state, event);
    if (!folded.applied || folded.state === undefined) continue;
    state = folded.state;
    changes.push({
      status: state.status,
      atMs: event.atMs,
      note: state.statusMessage ?? event.kind,
    });
  }
  return { status: state.status, changes };
}

function textOf(result: { content?: unknown }): string {
  const first = Array.isArray(result.content)
    ? (result.content[0] as { text?: unknown } | undefined)
    : undefined;
  return typeof first?.text === 'string'
    ? first.text
    : JSON.stringify(result).slice(0, MAX_SUMMARY);
}

function clip(text: string): string {
  return text.length <= MAX_SUMMARY ? text : `${text.slice(0, MAX_SUMMARY - 1)}…`;
}
