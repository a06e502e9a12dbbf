import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { parseCallbackUrl, resolveCallback } from '@tidemark/webhooks';
import { Agent, fetch as undiciFetch } from 'undici';

// How a pool reaches one copy of a hosted server (issue #60): a child process spoken to over its
// stdin and stdout, or a session with a server already running elsewhere over Streamable HTTP —
// its URL held to the webhooks' rules (https, public addresses only, the address checked once and
// pinned: a name that later resolves inside the deployment reaches nothing new).

/** Where a hosted server runs: exactly one of `command` (a child process) and `url`. */
export interface HostedServerTarget {
  readonly name: string;
  readonly command?: string | undefined;
  readonly args?: readonly string[] | undefined;
  /** Added to the few variables a child inherits (PATH, HOME, …: the SDK's default environment). */
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  /** A Streamable HTTP server's MCP endpoint. */
  readonly url?: string | undefined;
  /** `url` may be http to a loopback address (development and tests only). Default false. */
  readonly allowLoopback?: boolean | undefined;
}

/** One copy: its transport, and how to end it at once. */
export interface Connection {
  readonly transport: Transport;
  /** The child's pid; null for a remote server. */
  readonly pid: () => number | null;
  /** The last lines the child wrote on stderr (none for a remote server). */
  readonly stderr: string[];
  /** SIGKILL for a child; the session dropped for a remote server. */
  kill(): void;
  /** What errors name it by: its command or its URL. */
  readonly describe: string;
}

/** Lines of a child's stderr kept, to say why it failed. */
const STDERR_TAIL = 20;

export async function connectionFor(target: HostedServerTarget): Promise<Connection> {
  return target.url === undefined ? stdio(target) : await streamableHttp(target, target.url);
}

function stdio({ command = '', args = [], env = {}, cwd }: HostedServerTarget): Connection {
  const transport = new StdioClientTransport({
    command,
    args: [...args],
    env: { ...getDefaultEnvironment(), ...env },
    ...(cwd === undefined ? {} : { cwd }),
    stderr: 'pipe',
  });
  const stderr: string[] = [];
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    stderr.splice(0, Math.max(0, stderr.length - STDERR_TAIL));
  });
  return {
    transport,
    pid: () => transport.pid,
    stderr,
    kill: () => {
      if (transport.pid !== null) process.kill(transport.pid, 'SIGKILL');
    },
    describe: command,
  };
}

async function streamableHttp(target: HostedServerTarget, raw: string): Promise<Connection> {
  const policy = { allowLoopback: target.allowLoopback === true, subject: 'hosted server' };
  const { url, address, family } = await resolveCallback(parseCallbackUrl(raw, policy), policy);
  // Every connection goes to the address checked above, whatever the name resolves to later.
  const dispatcher = new Agent({
    connect: {
      lookup: (_hostname, options, callback) =>
        options.all === true
          ? callback(null, [{ address, family }])
          : callback(null, address, family),
    },
  });
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: (input, init) =>
      undiciFetch(input, {
        ...(init as Parameters<typeof undiciFetch>[1]),
        dispatcher,
      }),
  });
  return {
    transport,
    pid: () => null,
    stderr: [],
    kill: () => void transport.close(),
    describe: url.href,
  };
}
