import { AsyncLocalStorage } from 'node:async_hooks';
import {
  fromJsonSchema,
  type JsonSchemaType,
  type Progress,
  type ServerContext,
  type Tool,
} from '@modelcontextprotocol/server';
import { observeHostedServer } from '@tidemark/otel';
import type { TaskSupport } from '@tidemark/protocol';
import { currentExecution, defineToolModule, type ToolModule } from '@tidemark/tools';
import { type CallHooks, ChildPool, type HostedServerSpec } from './child-pool.js';
import { hostedServerSpecs } from './hosted-spec.js';
import { ChildRun, INPUT_KEY, ParkedRuns } from './input-rounds.js';

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
  let registered = false;
  const parked = new ParkedRuns();
  const closing: Array<() => Promise<void>> = [
    () => Promise.resolve(parked.close()),
    () => pool.close(),
  ];
  // Each tool may run as a task — a call that takes minutes is what hosting is for; the task is
  // Tidemark's, around a plain call to the child, whatever the child says of tasks of its own
  // (`execution.taskSupport`). Filled in once the server lists its tools.
  const taskSupport: Record<string, TaskSupport> = {};
  const module = defineToolModule({
    name: `mcp-server:${spec.name}`,
    source: `--mcp-server ${spec.name}`,
    retry: HOSTED_RETRY,
    taskSupport,
    async register(server) {
      if (listed === undefined) {
        listed = pool.start();
        // Its processes' memory and CPU in the worker's metrics, from the start to the end.
        const unobserve = observeHostedServer(spec.name, () => pool.pids());
        closing.push(() => Promise.resolve(unobserve()));
      }
      // The SDK warns of a tool name outside the naming standard (a Go server's "greet (structured)")
      // each time it is registered — on every session: once, at the worker's start, is enough.
      const quiet = registered;
      registered = true;
      for (const tool of await listed) {
        const name = spec.prefix === true ? `${spec.name}_${tool.name}` : tool.name;
        taskSupport[name] = 'optional';
        const handler = async (args: unknown, ctx: ServerContext) => {
          const relay = relayTo(ctx);
          // A later round of a call that asked for input brings the answer to its parked child.
          const owner = currentExecution()?.subject ?? '';
          const answer = ctx.mcpReq.inputResponses?.[INPUT_KEY];
          const resumed = parked.resume(ctx.mcpReq.requestState(), owner, answer);
          if (resumed !== undefined) resumed.round = relay.hooks;
          const run =
            resumed ??
            new ChildRun(relay.hooks, (hooks) =>
              pool.call(tool.name, args as Record<string, unknown> | undefined, hooks),
            );
          // This round's cancellation (a client's, a task's) cancels the child's call.
          const cancel = () => run.abort.abort(ctx.mcpReq.signal.reason);
          ctx.mcpReq.signal.addEventListener('abort', cancel, { once: true });
          try {
            const next = await run.next();
            if ('question' in next) return parked.park(run, next.question, owner);
            if ('error' in next) throw next.error;
            // The child's last progress may still be on its way to the log: the result after it.
            await relay.sent();
            return next.result;
          } finally {
            ctx.mcpReq.signal.removeEventListener('abort', cancel);
          }
        };
        withoutWarnings(quiet, () => server.registerTool(name, configOf(tool), handler));
      }
    },
  });
  const close = async () => {
    for (const step of closing) await step();
  };
  return Object.assign(module, { close, pids: () => pool.pids() });
}

/** A tool as the server lists it, as the SDK registers it: its schemas as JSON Schema. */
function configOf(tool: Tool) {
  return {
    ...(tool.title === undefined ? {} : { title: tool.title }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    inputSchema: fromJsonSchema(tool.inputSchema as JsonSchemaType),
    ...(tool.outputSchema === undefined
      ? {}
      : { outputSchema: fromJsonSchema(tool.outputSchema as JsonSchemaType) }),
    ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
  };
}

/** Runs `register` with the console's warnings silenced when `quiet` (it is synchronous). */
function withoutWarnings(quiet: boolean, register: () => unknown): void {
  if (!quiet) {
    register();
    return;
  }
  const warn = console.warn;
  console.warn = () => undefined;
  try {
    register();
  } finally {
    console.warn = warn;
  }
}

/**
 * What the child sends during a call, passed on to the call's client in the order it came: its
 * progress under the client's own token (none asked: none sent), its log messages, and its
 * elicitations and samplings (answered by the client, the answer handed back to the child).
 * `sent` resolves once every notification is written.
 */
function relayTo(ctx: ServerContext): { hooks: Omit<CallHooks, 'signal'>; sent(): Promise<void> } {
  const token = ctx.mcpReq._meta?.progressToken;
  // The child's messages come in on its pipe, outside the call: they are sent from inside the
  // call (its execution context), or they would go to the session's standalone stream — after
  // the result, maybe, which the client then drops.
  const inCall = AsyncLocalStorage.snapshot();
  let written = Promise.resolve();
  const inOrder = (send: () => Promise<void>) => {
    written = written.then(() => inCall(send)).catch(() => undefined);
  };
  return {
    hooks: {
      ...(token === undefined
        ? {}
        : {
            onProgress: (progress: Progress) =>
              inOrder(() =>
                ctx.mcpReq.notify({
                  method: 'notifications/progress',
                  params: { progressToken: token, ...progress },
                }),
              ),
          }),
      onLog: ({ level, data, logger }) => inOrder(() => ctx.mcpReq.log(level, data, logger)),
      onRequest: async (request) => {
        // What the child said before it asked reaches the client first.
        await written;
        return inCall(() =>
          request.method === 'elicitation/create'
            ? ctx.mcpReq.elicitInput(request.params)
            : ctx.mcpReq.requestSampling(request.params),
        );
      },
    },
    sent: () => written,
  };
}
