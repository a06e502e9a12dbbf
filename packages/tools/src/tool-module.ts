import type { McpServer } from '@modelcontextprotocol/server';
import type { V1McpServer } from './v1-server.js';
import { positiveInteger, TASK_SUPPORTS, type TaskSupport } from '@tidemark/protocol';
import type { EventType } from './event-types.js';

/** How a tool call is retried when it fails with a retryable error. Each retry is a new generation. */
export interface RetryPolicy {
  /** Executions in all, the first included. Default 3. */
  maxAttempts?: number;
  /** Wait before the first retry; doubles each time. Default 100 ms. */
  backoffMs?: number;
  /** Upper bound of the wait. Default 10 s. */
  maxBackoffMs?: number;
}

export const RETRY_DEFAULTS = { maxAttempts: 3, backoffMs: 100, maxBackoffMs: 10_000 } as const;

export interface ToolModuleContext {
  /** The session the server serves: one `McpServer` per session. */
  readonly sessionId: string;
}

/** What every tool module may say of itself, whichever SDK its code is written against. */
interface ToolModuleOptions {
  readonly name: string;
  /** Where it was loaded from (a path or package), for errors that must say which module failed. */
  readonly source?: string;
  /**
   * The version of this code (a release, a commit): journaled with each step it runs, and named
   * when a replay finds the journal does not match the code (`journal-mismatch`).
   */
  readonly version?: string;
  /** Retries for this module's tools; per tool in `toolRetry`. */
  readonly retry?: RetryPolicy;
  readonly toolRetry?: Readonly<Record<string, RetryPolicy>>;
  /**
   * Longest one execution of a tool may run: then its signal aborts and the call ends with an
   * error result naming the timeout (not retried). Per tool in `toolTimeoutMs`. Default: none.
   */
  readonly timeoutMs?: number;
  readonly toolTimeoutMs?: Readonly<Record<string, number>>;
  /**
   * OAuth scopes a caller's token must grant for this module's tools to run; per tool in
   * `toolScopes` (which replaces it for that tool). Checked on the worker before the tool runs; a
   * call without them is refused with `insufficient_scope` and the scopes in its error's `data`.
   * Without authentication (`--auth none`) nothing is checked. The SDK's own `scopeChallenge`
   * option of `registerTool` is honoured the same way, after these.
   */
  readonly requiredScopes?: readonly string[];
  readonly toolScopes?: Readonly<Record<string, readonly string[]>>;
  /** Added to the server's `instructions` (after the deployment's own), telling clients how to use these tools. */
  readonly instructions?: string;
  /**
   * Which tools may (`optional`) or must (`required`) run as tasks of the Tasks extension for
   * 2026-07-28 clients that declare it — the tool's `execution.taskSupport`. Undeclared tools are
   * `forbidden` (a plain call), unless the gateway runs `--tasks always`.
   */
  readonly taskSupport?: Readonly<Record<string, TaskSupport>>;
  /** The event types this module offers (the MCP Events extension), from `defineEventType`. */
  readonly events?: readonly EventType[];
}

/** A tool's declared task support, from the first module that declares it. */
export function taskSupportOf(modules: readonly ToolModule[], tool: string): TaskSupport {
  for (const module of modules) {
    const support = module.taskSupport?.[tool];
    if (support !== undefined) return support;
  }
  return 'forbidden';
}

/**
 * A tool module written against the official SDK v2 (`@modelcontextprotocol/server`): registers
 * tools, resources and prompts on its standard `McpServer`. A plain function `(server) => void` is
 * a module too.
 */
export interface V2ToolModule extends ToolModuleOptions {
  readonly sdk?: 'v2';
  register(server: McpServer, context: ToolModuleContext): void | Promise<void>;
}

/**
 * A tool module written against SDK v1 (`@modelcontextprotocol/sdk`): `register` gets v1's API
 * (`server.tool(...)`, `registerTool`, `extra.sendNotification`, `extra.signal`), bridged onto the
 * same durable streams. Its raw shapes must be Zod v4 (`zod` 4, or `zod/v4`).
 */
export interface V1ToolModule extends ToolModuleOptions {
  readonly sdk: 'v1';
  register(server: V1McpServer, context: ToolModuleContext): void | Promise<void>;
}

/** A tool module, for SDK v2 (the default) or SDK v1 code (`sdk: 'v1'`). */
export type ToolModule = V2ToolModule | V1ToolModule;

/** Types a tool module and validates its metadata early. */
export function defineToolModule(module: ToolModule): ToolModule {
  if (typeof module.name !== 'string' || module.name === '')
    throw new TypeError('defineToolModule: name must be a non-empty string');
  if (typeof module.register !== 'function')
    throw new TypeError(`defineToolModule(${module.name}): register must be a function`);
  if (
    module.version !== undefined &&
    (typeof module.version !== 'string' || module.version === '' || module.version.length > 100)
  )
    throw new TypeError(
      `defineToolModule(${module.name}): version must be a string of 1..100 characters, got ${JSON.stringify(module.version)}`,
    );
  if (module.sdk !== undefined && module.sdk !== 'v1' && module.sdk !== 'v2')
    throw new TypeError(
      `defineToolModule(${module.name}): sdk must be 'v1' or 'v2', got ${JSON.stringify(module.sdk)}`,
    );
  for (const [tool, support] of Object.entries(module.taskSupport ?? {}))
    if (!TASK_SUPPORTS.includes(support))
      throw new TypeError(
        `defineToolModule(${module.name}): taskSupport of ${tool} must be one of ${TASK_SUPPORTS.join(', ')}, got ${JSON.stringify(support)}`,
      );
  checkEventTypes(module);
  for (const policy of [module.retry, ...Object.values(module.toolRetry ?? {})])
    if (policy !== undefined) compileRetryPolicy(policy);
  checkModuleScopes(module);
  for (const timeout of [module.timeoutMs, ...Object.values(module.toolTimeoutMs ?? {})])
    if (timeout !== undefined)
      positiveInteger(`defineToolModule(${module.name}): timeoutMs`, timeout);
  return module;
}

/** Throw this (or any error with `retryable: true`) from a tool to have the call run again. */
export class RetryableToolError extends Error {
  readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryableToolError';
  }
}

export function isRetryableError(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && 'retryable' in error && error.retryable === true
  );
}

export type CompiledRetryPolicy = Required<RetryPolicy>;

export function compileRetryPolicy(policy: RetryPolicy = {}): CompiledRetryPolicy {
  const compiled = { ...RETRY_DEFAULTS, ...policy };
  positiveInteger('retry.maxAttempts', compiled.maxAttempts);
  for (const key of ['backoffMs', 'maxBackoffMs'] as const) {
    if (!Number.isInteger(compiled[key]) || compiled[key] < 0)
      throw new TypeError(`retry.${key}: expected an integer >= 0, got ${compiled[key]}`);
  }
  return compiled;
}

/** Each event type of a module came from `defineEventType`, under a name of its own. */
function checkEventTypes(module: ToolModule): void {
  const names = new Set<string>();
  for (const event of module.events ?? []) {
    if (typeof event?.descriptor !== 'object')
      throw new TypeError(
        `defineToolModule(${module.name}): each of events must come from defineEventType`,
      );
    if (names.has(event.name))
      throw new TypeError(
        `defineToolModule(${module.name}): two event types are named ${event.name}`,
      );
    names.add(event.name);
  }
}

/** An OAuth `scope-token` (RFC 6749 §3.3): printable ASCII but space, `"` and `\`. */
const SCOPE_TOKEN = /^[\u0021\u0023-\u005B\u005D-\u007E]+$/;

/** A module's `requiredScopes` and `toolScopes`, each an array of OAuth scope-tokens. */
function checkModuleScopes(module: ToolModule): void {
  const declared = [
    ['requiredScopes', module.requiredScopes] as const,
    ...Object.entries(module.toolScopes ?? {}).map(
      ([tool, scopes]) => [`toolScopes.${tool}`, scopes] as const,
    ),
  ];
  for (const [where, scopes] of declared)
    if (scopes !== undefined) checkScopes(`defineToolModule(${module.name}): ${where}`, scopes);
}

function checkScopes(where: string, scopes: unknown): void {
  if (!Array.isArray(scopes) || !scopes.every((scope) => typeof scope === 'string'))
    throw new TypeError(`${where} must be an array of scope strings`);
  for (const scope of scopes)
    if (!SCOPE_TOKEN.test(scope))
      throw new TypeError(
        `${where}: ${JSON.stringify(scope)} is not an OAuth scope (printable ASCII, no space, " or \\)`,
      );
}
