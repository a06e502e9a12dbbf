import type { McpServer } from '@modelcontextprotocol/server';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_TIDEMARK_ATTEMPT,
  ATTR_TIDEMARK_GENERATION,
  recordToolDuration,
  recordToolRetry,
  tidemarkTracer,
} from '@tidemark/otel';
import { formatGeneration } from '@tidemark/protocol';
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
      retrying(String(name), callback as (...params: unknown[]) => unknown, policy, host),
    );
  };
  return wrapped;
}

function retrying(
  name: string,
  callback: (...params: unknown[]) => unknown,
  policy: CompiledRetryPolicy,
  host: RetryHost,
) {
  return async (...params: unknown[]): Promise<unknown> => {
    const ctx = params.at(-1) as { mcpReq: { id: RequestId; signal: AbortSignal } };
    let backoff = policy.backoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await executeOnce(name, host.execution(ctx.mcpReq.id), () => callback(...params));
      } catch (error) {
        if (!isRetryableError(error) || attempt >= policy.maxAttempts || ctx.mcpReq.signal.aborted)
          throw error;
        recordToolRetry(name);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(backoff * 2, policy.maxBackoffMs);
        await host.retry(ctx.mcpReq.id);
      }
    }
  };
}

/** One execution of a tool: inside its `Execution` and its own span (a retry is a new one). */
function executeOnce(
  name: string,
  execution: Execution | undefined,
  run: () => unknown,
): Promise<unknown> {
  const attributes = {
    [ATTR_GEN_AI_TOOL_NAME]: name,
    ...(execution === undefined
      ? {}
      : {
          [ATTR_TIDEMARK_GENERATION]: formatGeneration(execution.generation),
          [ATTR_TIDEMARK_ATTEMPT]: execution.attempt,
        }),
  };
  return tidemarkTracer().startActiveSpan(`execute_tool ${name}`, { attributes }, async (span) => {
    const started = performance.now();
    let failed = false;
    try {
      return await (execution === undefined ? run() : runInExecution(execution, run));
    } catch (error) {
      failed = true;
      span.recordException(error instanceof Error ? error : new Error(String(error)));
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
      throw error;
    } finally {
      recordToolDuration(name, (performance.now() - started) / 1000, failed);
      span.end();
    }
  });
}
