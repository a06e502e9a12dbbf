import { Client } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { CallToolResult, Progress, Tool } from '@modelcontextprotocol/server';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { RetryableToolError } from '@tidemark/tools';

// The processes of one hosted stdio MCP server (issue #60): a few copies of the same command, each
// spoken to with the official MCP client over its stdin and stdout. A call goes to the least busy
// copy; a copy that exits (or is killed) fails the calls it had as retryable — the tool's retry
// policy runs them again, as new generations, on a copy started in its place.

/** A stdio MCP server a worker hosts, as `--mcp-server` or the chart's `worker.mcpServers` give it. */
export interface HostedServerSpec {
  /** Its name: what tools are prefixed with (`prefix`), and what errors and logs say. */
  readonly name: string;
  readonly command: string;
  readonly args?: readonly string[] | undefined;
  /** Added to the few variables a child inherits (PATH, HOME, …: the SDK's default environment). */
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  /** Copies of the server running at once. Default 2. */
  readonly processes?: number | undefined;
  /** Serve its tools as `<name>_<tool>` (many servers behind one endpoint). Default false. */
  readonly prefix?: boolean | undefined;
}

/** Lines of a child's stderr kept, to say why it failed. */
const STDERR_TAIL = 20;
/** How long a child may take to start and answer `initialize`. */
const START_TIMEOUT_MS = 30_000;

interface Child {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  readonly stderr: string[];
  calls: number;
  exited: boolean;
  /** The calls' progress callbacks, by the progress token this pool gave each call. */
  readonly progress: Map<string, (progress: Progress) => void>;
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
    options: { signal: AbortSignal; onProgress?: ((progress: Progress) => void) | undefined },
  ): Promise<CallToolResult> {
    const child = await this.leastBusy();
    child.calls++;
    const token = `tm-${++this.tokens}`;
    if (options.onProgress !== undefined) child.progress.set(token, options.onProgress);
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
      if (child.exited && !options.signal.aborted)
        throw new RetryableToolError(
          `the hosted server ${this.spec.name} exited during the call${tail(child)}`,
        );
      throw error;
    } finally {
      child.calls--;
      // The client hands notifications over a turn later than responses: a progress the child
      // sent just before its result still finds its callback.
      await new Promise((resolve) => setImmediate(resolve));
      child.progress.delete(token);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const child of await this.live()) await child.client.close().catch(() => undefined);
  }

  /** The pids of the running copies (tests kill one). */
  async pids(): Promise<number[]> {
    return (await this.live()).flatMap((c) => (c.transport.pid === null ? [] : [c.transport.pid]));
  }

  private async live(): Promise<Child[]> {
    const settled = await Promise.allSettled(this.children);
    return settled.flatMap((c) => (c.status === 'fulfilled' && !c.value.exited ? [c.value] : []));
  }

  private async leastBusy(): Promise<Child> {
    const live = await this.live();
    if (live.length === 0)
      throw new RetryableToolError(`no process of the hosted server ${this.spec.name} is running`);
    return live.reduce((a, b) => (b.calls < a.calls ? b : a));
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
    const { name, command, args = [], env = {}, cwd } = this.spec;
    const transport = new StdioClientTransport({
      command,
      args: [...args],
      env: { ...getDefaultEnvironment(), ...env },
      ...(cwd === undefined ? {} : { cwd }),
      stderr: 'pipe',
    });
    const child: Child = {
      client: new Client({ name: `tidemark-host-${name}`, version: '0.1.0' }),
      transport,
      stderr: [],
      calls: 0,
      exited: false,
      progress: new Map(),
    };
    // By the token this pool gave the call, not the SDK's per-request handlers: those are gone by
    // the time a progress sent just before the result is handed over (the SDK's own race).
    child.client.setNotificationHandler('notifications/progress', (notification) => {
      const { progressToken, ...progress } = notification.params;
      child.progress.get(String(progressToken))?.(progress);
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      child.stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      child.stderr.splice(0, Math.max(0, child.stderr.length - STDERR_TAIL));
    });
    const timer = setTimeout(() => void transport.close(), START_TIMEOUT_MS);
    try {
      await child.client.connect(transport);
      return child;
    } catch (error) {
      throw new TidemarkError(
        ErrorCodes.toolModule,
        `hosted server ${name}: ${command} did not start: ${error instanceof Error ? error.message : String(error)}${tail(child)}`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

function tail(child: Child): string {
  return child.stderr.length === 0
    ? ''
    : `; its stderr ended: ${child.stderr.slice(-5).join(' | ')}`;
}
