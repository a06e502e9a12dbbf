import type { McpServer } from '@modelcontextprotocol/server';
import type { RequestId } from '@tidemark/protocol';
import { runInExecution, type Execution } from './execution.js';
import {
  compileRetryPolicy,
  isRetryableError,
  type CompiledRetryPolicy,
  type ToolModule,
} from './tool-module.js';

/** What the retry wrapper needs from whoever runs the tools: the worker runtime or the test harness. */
export interface RetryHost {
  execution(requestId: RequestId): Execution | undefined;
  /** Starts the next execution of the call (a new generation in the worker). */
  retry(requestId: RequestId): Promise<void>;
}

/**
 * The server a module registers on: the standard `McpServer`, with each tool callback wrapped so a
 * retryable failure runs the call again — with backoff, up to the policy's attempts, never after
 * cancellation — and each attempt runs inside its `Execution`.
 */
export function withRetries(server: McpServer, module: ToolModule, host: RetryHost): McpServer {
  const original = server.registerTool.bind(server) as (...args: unknown[]) => unknown;
  const wrapped = Object.create(server) as McpServer;
  (wrapped as unknown as { registerTool: (...args: unknown[]) => unknown }).registerTool = (
    name: unknown,
    config: unknown,
    callback: unknown,
  ) => {
    const policy = compileRetryPolicy(module.toolRetry?.[String(name)] ?? module.retry);
    return original(
      name,
      config,
      retrying(callback as (...params: unknown[]) => unknown, policy, host),
    );
  };
  return wrapped;
}

function retrying(
  callback: (...params: unknown[]) => unknown,
  policy: CompiledRetryPolicy,
  host: RetryHost,
) {
  return async (...params: unknown[]): Promise<unknown> => {
    const ctx = params.at(-1) as { mcpReq: { id: RequestId; signal: AbortSignal } };
    let backoff = policy.backoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        const execution = host.execution(ctx.mcpReq.id);
        return await (execution === undefined
          ? callback(...params)
          : runInExecution(execution, () => callback(...params)));
      } catch (error) {
        if (!isRetryableError(error) || attempt >= policy.maxAttempts || ctx.mcpReq.signal.aborted)
          throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, policy.maxBackoffMs);
        await host.retry(ctx.mcpReq.id);
      }
    }
  };
}
