// A raw HTTP client of the Tasks extension (2026-07-28): what an SDK with tasks sends, written out,
// so the tests see every byte of the contract.
import { createParser } from 'eventsource-parser';
import { randomUUID } from 'node:crypto';

export const TASKS = 'io.modelcontextprotocol/tasks';

export interface TaskClientOptions {
  /** Declare the Tasks extension on each request (default true). */
  tasks?: boolean;
  token?: string;
  /** More headers (e.g. `Idempotency-Key`). */
  headers?: Record<string, string>;
  /** The JSON-RPC id (default a fresh UUID). */
  id?: string | number;
  /** More `_meta` (e.g. an idempotency key). */
  meta?: Record<string, unknown>;
  signal?: AbortSignal;
}

export interface RpcAnswer {
  readonly status: number;
  readonly text: string;
  readonly body: {
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: unknown };
  };
}

/** One JSON-RPC request of the stateless lane; answers its HTTP status and JSON body. */
export async function rpc(
  url: string,
  method: string,
  params: Record<string, unknown>,
  options: TaskClientOptions = {},
): Promise<RpcAnswer> {
  const response = await rpcResponse(url, method, params, options);
  const text = await response.text();
  return { status: response.status, text, body: parseBody(text) as RpcAnswer['body'] };
}

/** The same request, answered as the HTTP response itself: for a test that reads a stream as it comes. */
export function rpcResponse(
  url: string,
  method: string,
  params: Record<string, unknown>,
  options: TaskClientOptions = {},
): Promise<Response> {
  // A client that can ask its user (elicitation), and — unless told otherwise — takes tasks.
  const capabilities = {
    elicitation: { form: {} },
    ...(options.tasks === false ? {} : { extensions: { [TASKS]: {} } }),
  };
  const taskId = typeof params['taskId'] === 'string' ? params['taskId'] : undefined;
  const name = typeof params['name'] === 'string' ? params['name'] : taskId;
  return fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': method,
      ...(name === undefined ? {} : { 'Mcp-Name': name }),
      ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
      ...options.headers,
    },
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id ?? randomUUID(),
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw-task-client', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': capabilities,
          ...options.meta,
        },
      },
    }),
  });
}

/** A JSON body, or the last `data:` message of an SSE body. */
function parseBody(text: string): unknown {
  if (text.trimStart().startsWith('{')) return JSON.parse(text);
  const messages = sseMessages(text);
  return messages.length === 0 ? {} : messages[messages.length - 1];
}

/** Every `data:` message of an SSE body, parsed. */
export function sseMessages(text: string): Array<Record<string, unknown>> {
  const messages: Array<Record<string, unknown>> = [];
  const parser = createParser({
    onEvent: ({ data }) => {
      if (data !== '') messages.push(JSON.parse(data) as Record<string, unknown>);
    },
  });
  parser.feed(`${text}\n\n`);
  return messages;
}

/** Polls `tasks/get` (on each URL in turn) until the task's status is one of `statuses`. */
export async function pollTask(
  urls: readonly string[],
  taskId: string,
  statuses: readonly string[],
  options: TaskClientOptions & { timeoutMs?: number; intervalMs?: number; seen?: string[] } = {},
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (let i = 0; ; i++) {
    const { body } = await rpc(urls[i % urls.length]!, 'tasks/get', { taskId }, options);
    if (body.result === undefined) throw new Error(`tasks/get failed: ${JSON.stringify(body)}`);
    const status = String(body.result['status']);
    if (options.seen !== undefined && options.seen.at(-1) !== status) options.seen.push(status);
    if (statuses.includes(status)) return body.result;
    if (['completed', 'failed', 'cancelled'].includes(status))
      throw new Error(`task ${taskId} ended ${status}: ${JSON.stringify(body.result)}`);
    if (Date.now() > deadline)
      throw new Error(`task ${taskId} still ${status} after ${options.timeoutMs ?? 30_000} ms`);
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
