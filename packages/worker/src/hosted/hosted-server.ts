import { AsyncLocalStorage } from 'node:async_hooks';
import {
  fromJsonSchema,
  type JsonSchemaType,
  type Progress,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { defineToolModule, type ToolModule } from '@tidemark/tools';
import { ChildPool, type HostedServerSpec } from './child-pool.js';
import { hostedServerSpecs } from './hosted-spec.js';

// An MCP server in any language, hosted as a tool module (issue #60): its tools — their schemas,
// annotations and output schemas — are served as the worker's own, each call forwarded to one of
// the server's processes. What the module gives every call is theirs too: a generation in the log,
// progress that resumes exactly, retries, cancellation, scopes, the audit trail.

/** Retries of a call whose process exited under it (a crash, a kill): on another copy. */
const HOSTED_RETRY = { maxAttempts: 3, backoffMs: 200 };

/** A hosted server's module: a tool module, and its processes' end. */
export type HostedServerModule = ToolModule & {
  /** Ends the server's processes (after the worker stopped). */
  close(): Promise<void>;
  /** The pids of its processes running now. */
  pids(): Promise<number[]>;
};

/**
 * A tool module serving the tools of the stdio MCP server `spec` describes. Its processes start
 * when the module is first registered (the worker's start, which a server that does not start
 * stops, naming it with its stderr).
 */
export function hostedServerModule(given: HostedServerSpec): HostedServerModule {
  const [spec] = hostedServerSpecs([given]) as [HostedServerSpec];
  const pool = new ChildPool(spec);
  let listed: ReturnType<ChildPool['start']> | undefined;
  const module = defineToolModule({
    name: `mcp-server:${spec.name}`,
    source: `--mcp-server ${spec.name}`,
    retry: HOSTED_RETRY,
    async register(server) {
      listed ??= pool.start();
      for (const tool of await listed) {
        const name = spec.prefix === true ? `${spec.name}_${tool.name}` : tool.name;
        server.registerTool(
          name,
          {
            ...(tool.title === undefined ? {} : { title: tool.title }),
            ...(tool.description === undefined ? {} : { description: tool.description }),
            inputSchema: fromJsonSchema(tool.inputSchema as JsonSchemaType),
            ...(tool.outputSchema === undefined
              ? {}
              : { outputSchema: fromJsonSchema(tool.outputSchema as JsonSchemaType) }),
            ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
          },
          async (args: unknown, ctx: ServerContext) => {
            const progress = progressTo(ctx);
            const result = await pool.call(tool.name, args as Record<string, unknown> | undefined, {
              signal: ctx.mcpReq.signal,
              onProgress: progress?.send,
            });
            // The child's last progress may still be on its way to the log: the result after it.
            await progress?.sent();
            return result;
          },
        );
      }
    },
  });
  return Object.assign(module, { close: () => pool.close(), pids: () => pool.pids() });
}

/**
 * The child's progress, passed on under the client's own token (none asked: none sent), in the
 * order it came; `sent` resolves once all of it is written.
 */
function progressTo(ctx: ServerContext) {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return undefined;
  // The child's messages come in on its pipe, outside the call: its progress is sent from inside
  // the call (its execution context), or it would go to the session's standalone stream — after
  // the result, maybe, which the client then drops.
  const inCall = AsyncLocalStorage.snapshot();
  let written = Promise.resolve();
  return {
    send: (progress: Progress) => {
      const params = { progressToken: token, ...progress };
      written = written
        .then(() => inCall(() => ctx.mcpReq.notify({ method: 'notifications/progress', params })))
        .catch(() => undefined);
    },
    sent: () => written,
  };
}
