import type { McpServer } from '@modelcontextprotocol/server';
import type { V1McpServer } from '@tidemark/tools';

// SDK v1 modules (`@modelcontextprotocol/sdk`: `server.tool(...)`, `extra.sendNotification`) run
// unchanged: their `register` gets this object, which speaks v1's registration API and registers
// onto the v2 server the session runs — so their tools get the same durable streams, retries,
// timeouts and spans as any other. Raw shapes must be Zod v4 (`zod` ≥ 4, or `zod/v4`), as the v2
// SDK requires; a Zod v3 shape fails the startup probe with the SDK's own message.

/** A v1 tool, prompt or resource callback: `(args, extra)`, or `(extra)` without a schema. */
type V1Callback = (...params: never[]) => unknown;

/** v1's `RequestHandlerExtra`, made from the v2 handler context. */
interface V1Extra {
  signal: AbortSignal;
  requestId: unknown;
  sessionId: string | undefined;
  _meta: unknown;
  authInfo: unknown;
  sendNotification(notification: unknown): Promise<void>;
  sendRequest(request: unknown, resultSchema?: unknown, options?: unknown): Promise<unknown>;
}

type V2Context = {
  sessionId?: string;
  mcpReq: {
    id: unknown;
    signal: AbortSignal;
    _meta?: unknown;
    notify(notification: unknown): Promise<void>;
    send(...args: unknown[]): Promise<unknown>;
  };
  http?: { authInfo?: unknown };
};

function extraOf(ctx: V2Context): V1Extra {
  return {
    signal: ctx.mcpReq.signal,
    requestId: ctx.mcpReq.id,
    sessionId: ctx.sessionId,
    _meta: ctx.mcpReq._meta,
    authInfo: ctx.http?.authInfo,
    sendNotification: (notification) => ctx.mcpReq.notify(notification),
    sendRequest: (request, resultSchema, options) =>
      resultSchema === undefined
        ? ctx.mcpReq.send(request, options)
        : ctx.mcpReq.send(request, resultSchema, options),
  };
}

/** A v1 callback as a v2 one: the same arguments, v1's `extra` in place of v2's context. */
function adapt(callback: V1Callback): (...params: unknown[]) => unknown {
  const call = callback as (...params: unknown[]) => unknown;
  return (...params: unknown[]) => {
    const ctx = params.at(-1) as V2Context;
    return call(...params.slice(0, -1), extraOf(ctx));
  };
}

/** v1's test for a raw Zod shape: a plain object whose values are all schemas (`{}` included). */
function isRawShape(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every(
    (field) =>
      typeof field === 'object' && field !== null && ('~standard' in field || '_def' in field),
  );
}

/**
 * v1's `tool()` overloads: `(name, cb)`, `(name, description, cb)`, `(name, shape, cb)`,
 * `(name, shape, annotations, cb)`, `(name, description, shape, cb)`,
 * `(name, description, shape, annotations, cb)`.
 */
function toolConfig(rest: unknown[]): { config: Record<string, unknown>; callback: V1Callback } {
  const callback = rest.pop() as V1Callback;
  const config: Record<string, unknown> = {};
  if (typeof rest[0] === 'string') config['description'] = rest.shift();
  if (rest.length > 0 && isRawShape(rest[0])) config['inputSchema'] = rest.shift();
  if (rest.length > 0 && typeof rest[0] === 'object') config['annotations'] = rest.shift();
  return { config, callback };
}

/** v1's `prompt()` overloads: `(name, cb)`, `(name, description, cb)`, `(name, [description,] argsShape, cb)`. */
function promptConfig(rest: unknown[]): { config: Record<string, unknown>; callback: V1Callback } {
  const callback = rest.pop() as V1Callback;
  const config: Record<string, unknown> = {};
  if (typeof rest[0] === 'string') config['description'] = rest.shift();
  if (rest.length > 0) config['argsSchema'] = rest.shift();
  return { config, callback };
}

/** The v1 registration API over a v2 server (usually the one `withRetries` wraps). */
export function v1Server(server: McpServer): V1McpServer {
  const v2 = server as unknown as {
    registerTool(name: string, config: unknown, callback: unknown): unknown;
    registerPrompt(name: string, config: unknown, callback: unknown): unknown;
    registerResource(name: string, uri: unknown, metadata: unknown, callback: unknown): unknown;
  };
  return {
    tool: (name, ...rest) => {
      const { config, callback } = toolConfig(rest);
      return v2.registerTool(name, config, adapt(callback));
    },
    registerTool: (name, config, callback) => v2.registerTool(name, config, adapt(callback)),
    prompt: (name, ...rest) => {
      const { config, callback } = promptConfig(rest);
      return v2.registerPrompt(name, config, adapt(callback));
    },
    registerPrompt: (name, config, callback) => v2.registerPrompt(name, config, adapt(callback)),
    resource: (name, uriOrTemplate, ...rest) => {
      const callback = rest.pop() as V1Callback;
      const metadata = (rest[0] ?? {}) as Record<string, unknown>;
      return v2.registerResource(name, uriOrTemplate, metadata, adapt(callback));
    },
    registerResource: (name, uriOrTemplate, metadata, callback) =>
      v2.registerResource(name, uriOrTemplate, metadata, adapt(callback)),
    sendToolListChanged: () => server.sendToolListChanged(),
    sendResourceListChanged: () => server.sendResourceListChanged(),
    sendPromptListChanged: () => server.sendPromptListChanged(),
    sendLoggingMessage: (params) =>
      server.sendLoggingMessage(params as Parameters<McpServer['sendLoggingMessage']>[0]),
    isConnected: () => server.isConnected(),
    get server() {
      return server.server;
    },
  };
}
