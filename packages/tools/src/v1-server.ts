import type { McpServer } from '@modelcontextprotocol/server';

/** The v1 `McpServer` API a v1 module calls (registration, notifications, the low-level server). */
export interface V1McpServer {
  tool(name: string, ...rest: unknown[]): unknown;
  registerTool(name: string, config: Record<string, unknown>, callback: V1Callback): unknown;
  prompt(name: string, ...rest: unknown[]): unknown;
  registerPrompt(name: string, config: Record<string, unknown>, callback: V1Callback): unknown;
  resource(name: string, uriOrTemplate: unknown, ...rest: unknown[]): unknown;
  registerResource(
    name: string,
    uriOrTemplate: unknown,
    metadata: Record<string, unknown>,
    callback: V1Callback,
  ): unknown;
  sendToolListChanged(): void;
  sendResourceListChanged(): void;
  sendPromptListChanged(): void;
  sendLoggingMessage(params: Record<string, unknown>): Promise<void>;
  isConnected(): boolean;
  /** The low-level server (v1 modules reach for `server.server` to send notifications). */
  readonly server: McpServer['server'];
}

/** A v1 tool, prompt or resource callback: `(args, extra)`, or `(extra)` without a schema. */
type V1Callback = (...params: never[]) => unknown;
