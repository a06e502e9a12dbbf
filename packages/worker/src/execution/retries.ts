import { setTimeout as sleep } from 'node:timers/promises';
import type { McpServer, ScopeChallengeHandler } from '@modelcontextprotocol/server';
import { SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_TIDEMARK_ATTEMPT,
  ATTR_TIDEMARK_GENERATION,
  recordToolDuration,
  recordToolRetry,
  tidemarkTracer,
} from '@tidemark/otel';
import { backoffMs, formatGeneration, messageOf } from '@tidemark/protocol';
import type { RequestId } from '@tidemark/protocol';
import { runInExecution } from '@tidemark/tools/runtime';
import {
  compileRetryPolicy,
  isRetryableError,
  type CompiledRetryPolicy,
  type ToolModule,
  type ToolModuleContext,
  type Execution,
  type ToolLogger,
} from '@tidemark/tools';
import type { EmitterFor } from '../events/index.js';
import type { CallEnd } from './call-audit.js';
import { runCompensations } from './compensations.js';
import { toolScopeChallenge } from './scope-challenge.js';
import { Asleep } from './sleep.js';
import { v1Server } from './v1-server.js';

/** What the retry wrapper needs from whoever runs the tools: the worker runtime or the test harness. */
export interface RetryHost {
  execution(requestId: RequestId): Execution | undefined;
  /** Starts the next execution of the call (a new generation in the worker). */
  retry(requestId: RequestId): Promise<void>;
  /** True once this process stopped serving the call (its next owner goes on with it). */
  stopped?(requestId: RequestId): boolean;
  /** Each execution's end: the one line an operator reads. */
  onExecutionEnd?(end: ExecutionEnd): void;
  /** The call ended here for good: its audit record, written before its answer. */
  audit?(requestId: RequestId, end: CallEnd): Promise<void>;
  /** The logger tools get (`currentExecution().log`), a child per execution. */
  readonly logger?: ToolLogger | undefined;
  /**
   * What tools emit event occurrences with (`currentExecution().emit`), for the call's subject,
   * when events are served.
   */
  readonly emitAs?: EmitterFor | undefined;
}

/**
 * How one execution of a tool ended: `ok`; `tool-error` (it returned an error result, a timeout
 * included); `retrying` (it threw a retryable error and runs again); `asleep` (a durable sleep:
 * it runs again at its wake time); `failed` (it threw, and the call ends with that error);
 * `cancelled` (it threw after its call was cancelled: `error` is the cancellation's reason).
 */
export interface ExecutionEnd {
  readonly tool: string;
  readonly execution: Execution | undefined;
  readonly outcome: 'ok' | 'tool-error' | 'retrying' | 'asleep' | 'failed' | 'cancelled';
  readonly durationMs: number;
  readonly error?: unknown;
}

/**
 * Registers a module on a server the way every session does: v2 code on the wrapped server, v1
 * code through the v1 bridge onto it.
 */
export async function registerModule(
  server: McpServer,
  module: ToolModule,
  host: RetryHost,
  context: ToolModuleContext,
): Promise<void> {
  const wrapped = withRetries(server, module, host);
  if (module.sdk === 'v1') await module.register(v1Server(wrapped), context);
  else await module.register(wrapped, context);
}

/**
 * The server a module registers on: the standard `McpServer`, with each tool callback wrapped so a
 * retryable failure runs the call again — with backoff, up to the policy's attempts, never after
 * cancellation — and each attempt runs inside its `Execution`.
 */
function withRetries(server: McpServer, module: ToolModule, host: RetryHost): McpServer {
  const original = server.registerTool.bind(server) as (...args: unknown[]) => unknown;
  const wrapped = Object.create(server) as McpServer;
  (wrapped as unknown as { registerTool: (...args: unknown[]) => unknown }).registerTool = (
    name: unknown,
    config: unknown,
    callback: unknown,
  ) => {
    const tool = String(name);
    const policy = compileRetryPolicy(module.toolRetry?.[tool] ?? module.retry);
    const timeoutMs = module.toolTimeoutMs?.[tool] ?? module.timeoutMs;
    const run = withTimeout(tool, callback as ToolCallback, timeoutMs);
    const own = (config as { scopeChallenge?: ScopeChallengeHandler } | undefined)?.scopeChallenge;
    const scopeChallenge = toolScopeChallenge(module, tool, own);
    const scoped =
      scopeChallenge === undefined ? config : { ...(config as object), scopeChallenge };
    return original(name, scoped, retrying(tool, run, policy, host, module));
  };
  return wrapped;
}

type ToolCallback = (...params: unknown[]) => unknown;
/** The SDK's request context, the last parameter of every tool callback. */
type ToolContext = { mcpReq: { id: RequestId; signal: AbortSignal } };

function retrying(
  name: string,
  callback: ToolCallback,
  policy: CompiledRetryPolicy,
  host: RetryHost,
  module: Pick<ToolModule, 'name' | 'version'>,
) {
  const { version } = module;
  return async (...params: unknown[]): Promise<unknown> => {
    const ctx = params.at(-1) as ToolContext;
    const { signal } = ctx.mcpReq;
    // The call's end, for good, in its audit trail — unless this process stopped serving it (its
    // next owner ends it).
    const audited = (end: Omit<CallEnd, 'tool' | 'arguments'>) =>
      host.stopped?.(ctx.mcpReq.id) === true
        ? Promise.resolve()
        : host.audit?.(ctx.mcpReq.id, {
            tool: name,
            module: module.name,
            arguments: params.length > 1 ? params[0] : undefined,
            ...end,
          });
    for (let attempt = 1; ; attempt++) {
      const execution = withLogger(host, name, host.execution(ctx.mcpReq.id), version, signal);
      const started = performance.now();
      const end = (outcome: ExecutionEnd['outcome'], error?: unknown) =>
        host.onExecutionEnd?.({
          tool: name,
          execution,
          outcome,
          durationMs: performance.now() - started,
          ...(error === undefined ? {} : { error }),
        });
      try {
        const result = await executeOnce(name, execution, () => callback(...params));
        const toolError = (result as { isError?: unknown } | undefined)?.isError === true;
        end(toolError ? 'tool-error' : 'ok');
        await audited({ outcome: 'answered', toolError });
        return result;
      } catch (error) {
        // A cancelled call (notifications/cancelled, tasks/cancel, a closed stream, a lost
        // partition) is an outcome, not a failure of the tool: its reason is the signal's.
        // The call ends here for good (cancelled, or failed past its retries): its saga's
        // compensations run first — unless this worker stopped serving it (its partition moved,
        // the worker stops): the next owner goes on with the call.
        const undo = () =>
          host.stopped?.(ctx.mcpReq.id) === true
            ? Promise.resolve()
            : runCompensations(execution, (compensation, failure) =>
                execution?.log?.error(
                  { compensation, err: failure },
                  'a compensation failed; the others still run',
                ),
              );
        if (signal.aborted) {
          end('cancelled', signal.reason);
          await undo();
          await audited({ outcome: 'cancelled', reason: signal.reason });
          throw error;
        }
        // Asleep (`ex.sleep`): the invocation ends here, unanswered; the lane runs it on time.
        if (error instanceof Asleep) {
          end('asleep');
          return { content: [{ type: 'text', text: error.message }] };
        }
        const final = !isRetryableError(error) || attempt >= policy.maxAttempts;
        end(final ? 'failed' : 'retrying', error);
        if (final) {
          await undo();
          await audited({ outcome: 'error', reason: error });
          throw error;
        }
        recordToolRetry(name);
        // Jittered (calls that failed together do not retry in step), and cut short by
        // cancellation: a call cancelled while it waits is not run again.
        const wait = backoffMs(attempt - 1, {
          initialMs: policy.backoffMs,
          maxMs: policy.maxBackoffMs,
          jitter: true,
        });
        if (!(await pause(wait, signal))) {
          await undo();
          await audited({ outcome: 'cancelled', reason: signal.reason });
          throw error;
        }
        await host.retry(ctx.mcpReq.id);
      }
    }
  };
}

/**
 * The execution with its tool's logger (a child stamped with the tool and where it runs), its
 * emitter, its module's version and its signal.
 */
function withLogger(
  host: RetryHost,
  tool: string,
  execution: Execution | undefined,
  version: string | undefined,
  signal: AbortSignal,
) {
  if (execution === undefined) return execution;
  const emit = host.emitAs === undefined ? {} : { emit: host.emitAs(execution.subject) };
  const moduleVersion = version === undefined ? {} : { moduleVersion: version };
  const added = { ...emit, ...moduleVersion, abortSignal: signal };
  if (host.logger === undefined) return { ...execution, ...added };
  const { sessionId: session, stream, attempt } = execution;
  return { ...execution, ...added, log: host.logger.child({ tool, session, stream, attempt }) };
}

/** Waits `ms`; false when the signal aborted first. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/**
 * Bounds each execution of a tool: past `timeoutMs` the signal the tool sees aborts and the call
 * ends with an error result naming the timeout. The tool's own signal still aborts on cancellation.
 */
function withTimeout(name: string, callback: ToolCallback, timeoutMs: number | undefined) {
  if (timeoutMs === undefined) return callback;
  return async (...params: unknown[]): Promise<unknown> => {
    const ctx = params.at(-1) as ToolContext;
    const timer = new AbortController();
    // The SDK's context with a signal that also aborts on the timeout; everything else inherited.
    const mcpReq = Object.create(ctx.mcpReq, {
      signal: { value: AbortSignal.any([ctx.mcpReq.signal, timer.signal]) },
    }) as ToolContext['mcpReq'];
    const bounded = Object.create(ctx, { mcpReq: { value: mcpReq } }) as ToolContext;
    let handle: NodeJS.Timeout | undefined;
    const timedOut = new Promise<unknown>((resolve) => {
      handle = setTimeout(() => {
        const message = `Tool ${name} timed out after ${timeoutMs} ms`;
        timer.abort(new Error(message));
        resolve({ content: [{ type: 'text', text: message }], isError: true });
      }, timeoutMs);
    });
    try {
      return await Promise.race([callback(...params.slice(0, -1), bounded), timedOut]);
    } finally {
      clearTimeout(handle);
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
        message: messageOf(error),
      });
      throw error;
    } finally {
      recordToolDuration(name, (performance.now() - started) / 1000, failed);
      span.end();
    }
  });
}
