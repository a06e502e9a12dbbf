import { Client } from '@modelcontextprotocol/client';
import type {
  CallToolResult,
  CreateMessageRequest,
  ElicitRequest,
  LoggingMessageNotification,
  Progress,
  Tool,
} from '@modelcontextprotocol/server';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { RetryableToolError } from '@tidemark/tools';
import { connectionFor, type Connection, type HostedServerTarget } from './connections.js';

// The copies of one hosted MCP server (issue #60): a few processes of the same command, each
// spoken to with the official MCP client over its stdin and stdout — or a few sessions with a
// server running elsewhere, over Streamable HTTP. A call goes to the least busy
// copy; a copy that exits (or is killed) fails the calls it had as retryable — the tool's retry
// policy runs them again, as new generations, on a copy started in its place.

/**
 * An MCP server a worker hosts, as `--mcp-server` or the chart's `worker.mcpServers` give it: a
 * command it runs (stdio) or a URL it connects to (Streamable HTTP).
 */
export interface HostedServerSpec extends HostedServerTarget {
  /** Copies of the server running at once. Default 2. */
  readonly processes?: number | undefined;
  /** Serve its tools as `<name>_<tool>` (many servers behind one endpoint). Default false. */
  readonly prefix?: boolean | undefined;
  /**
   * While a copy runs calls it is pinged this often; one that does not answer within the same
   * time is killed (its calls retried on another copy). Default 15 s.
   */
  readonly pingEveryMs?: number | undefined;
}

/** What a call hears from the copy that runs it, and what it answers the copy's requests with. */
export interface CallHooks {
  readonly signal: AbortSignal;
  onProgress?: ((progress: Progress) => void) | undefined;
  /** A log message (`notifications/message`) of the copy while it ran only this call. */
  onLog?: ((params: LoggingMessageNotification['params']) => void) | undefined;
  /** An elicitation or a sampling the copy asked for while it ran only this call. */
  onRequest?:
    | ((
        request:
          | Pick<ElicitRequest, 'method' | 'params'>
          | Pick<CreateMessageRequest, 'method' | 'params'>,
      ) => Promise<unknown>)
    | undefined;
}

/** How long a child may take to start and answer `initialize`. */
const START_TIMEOUT_MS = 30_000;

interface Child {
  readonly client: Client;
  readonly connection: Connection;
  exited: boolean;
  /** Why it was killed (it stopped answering), if it was. */
  killed?: string;
  /** The calls it runs, by the progress token this pool gave each. */
  readonly calls: Map<string, CallHooks>;
}

export class ChildPool {
  /** The copies running or starting; an exited one leaves, and another starts in its place. */
  private readonly children = new Set<Promise<Child>>();
  private closed = false;
  private tokens = 0;

  constructor(private readonly spec: HostedServerSpec) {}

  /** Starts every copy; resolves with the tools the first lists. A copy that fails to start fails it, with its stderr. */
  async start(): Promise<Tool[]> {
    for (let i = 0; i < (this.spec.processes ?? 2); i++) this.add();
    const [first] = await Promise.all(this.children);
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await first!.client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /**
   * Calls `tool` on the least busy copy. Its progress is passed on; `signal` cancels it there
   * (`notifications/cancelled`). A copy that exits meanwhile fails the call retryably.
   */
  async call(
    tool: string,
    args: Record<string, unknown> | undefined,
    options: CallHooks,
  ): Promise<CallToolResult> {
    const child = await this.leastBusy();
    const token = `tm-${++this.tokens}`;
    child.calls.set(token, options);
    const watching = this.watch(child);
    try {
      return await child.client.callTool(
        {
          name: tool,
          ...(args === undefined ? {} : { arguments: args }),
          _meta: { progressToken: token },
        },
        // The tool's own timeout (`timeoutMs`) bounds it, not the SDK's minute.
        { signal: options.signal, timeout: 2 ** 31 - 1 },
      );
    } catch (error) {
      // A remote server's session that failed under the call (a network error, its server gone):
      // dropped, as an exited child is, and the call run again on a new one.
      if (this.spec.url !== undefined && !(error instanceof ProtocolError) && !child.exited) {
        child.killed ??= `failed (${error instanceof Error ? error.message : String(error)})`;
        child.connection.kill();
        child.exited = true;
      }
      if (child.exited && !options.signal.aborted)
        throw new RetryableToolError(
          `the hosted server ${this.spec.name} ${child.killed ?? 'exited'} during the call${tail(child)}`,
        );
      throw error;
    } finally {
      watching.stop();
      // The client hands notifications over a turn later than responses: a progress the child
      // sent just before its result still finds its callback.
      await new Promise((resolve) => setImmediate(resolve));
      child.calls.delete(token);
    }
  }

  /**
   * Pings `child` while this call runs on it: a copy that stops answering (a deadlock, a stopped
   * process) is killed, so its calls fail as retryable rather than hang.
   */
  private watch(child: Child): { stop(): void } {
    const everyMs = this.spec.pingEveryMs ?? 15_000;
    const timer = setInterval(() => {
      child.client.ping({ timeout: everyMs }).catch(() => {
        if (child.exited || child.killed !== undefined) return;
        child.killed = `stopped answering (no pong in ${everyMs} ms) and was killed`;
        child.connection.kill();
      });
    }, everyMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const child of await this.live()) await child.client.close().catch(() => undefined);
  }

  /** The pids of the running copies (tests kill one). */
  async pids(): Promise<number[]> {
    return (await this.live()).flatMap((c) => c.connection.pid() ?? []);
  }

  private async live(): Promise<Child[]> {
    const settled = await Promise.allSettled(this.children);
    return settled.flatMap((c) => (c.status === 'fulfilled' && !c.value.exited ? [c.value] : []));
  }

  private async leastBusy(): Promise<Child> {
    const live = await this.live();
    if (live.length === 0)
      throw new RetryableToolError(`no process of the hosted server ${this.spec.name} is running`);
    return live.reduce((a, b) => (b.calls.size < a.calls.size ? b : a));
  }

  /** Starts a copy; once it exits, it leaves and another starts (unless the pool is closed). */
  private add(): void {
    const started = this.spawn();
    this.children.add(started);
    started.then(
      (child) => {
        child.client.onclose = () => {
          child.exited = true;
          this.children.delete(started);
          if (!this.closed) this.add();
        };
      },
      () => this.children.delete(started),
    );
  }

  private async spawn(): Promise<Child> {
    const { name } = this.spec;
    const connection = await connectionFor(this.spec).catch((error: unknown) => {
      throw new TidemarkError(
        ErrorCodes.toolModule,
        `hosted server ${name}: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    });
    const child: Child = {
      // It asks its client's user and model through the call's own client (`bridge`).
      client: new Client(
        { name: `tidemark-host-${name}`, version: '0.1.0' },
        { capabilities: { elicitation: { form: {}, url: {} }, sampling: {} } },
      ),
      connection,
      exited: false,
      calls: new Map(),
    };
    bridge(child);
    const timer = setTimeout(() => void connection.transport.close(), START_TIMEOUT_MS);
    try {
      await child.client.connect(connection.transport);
      // Everything it logs reaches the call: the call's client filters by its own level.
      if (child.client.getServerCapabilities()?.logging !== undefined)
        await child.client.setLoggingLevel('debug');
      return child;
    } catch (error) {
      throw new TidemarkError(
        ErrorCodes.toolModule,
        `hosted server ${name}: ${connection.describe} did not start: ${error instanceof Error ? error.message : String(error)}${tail(child)}`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * What a copy sends its client, passed to the call it belongs to. Progress names its call (the
 * token this pool gave it — not the SDK's per-request handlers, which are gone by the time a
 * progress sent just before the result is handed over). A log message or a request does not:
 * over stdio nothing relates it to a call, so it goes to the copy's only call, and a request
 * made while the copy runs several is refused as ambiguous.
 */
function bridge(child: Child): void {
  const { client } = child;
  client.setNotificationHandler('notifications/progress', (notification) => {
    const { progressToken, ...progress } = notification.params;
    child.calls.get(String(progressToken))?.onProgress?.(progress);
  });
  const only = (): CallHooks | undefined =>
    child.calls.size === 1 ? [...child.calls.values()][0] : undefined;
  client.setNotificationHandler('notifications/message', (notification) => {
    only()?.onLog?.(notification.params);
  });
  const ask = async (request: Parameters<NonNullable<CallHooks['onRequest']>>[0]) => {
    const call = only();
    if (call?.onRequest === undefined)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `${request.method} is answered for a process running one call; this one runs ${child.calls.size}`,
      );
    return call.onRequest(request);
  };
  client.setRequestHandler('elicitation/create', (request) => ask(request) as never);
  client.setRequestHandler('sampling/createMessage', (request) => ask(request) as never);
}

function tail({ connection: { stderr } }: Child): string {
  return stderr.length === 0 ? '' : `; its stderr ended: ${stderr.slice(-5).join(' | ')}`;
}
