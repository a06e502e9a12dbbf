import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createMcpHandler,
  InMemoryTransport,
  type McpServer,
  type CallToolResult,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
} from '@modelcontextprotocol/server';
import { STATELESS_PROTOCOL_VERSION } from '@tidemark/protocol';
import { fitMessage } from '@tidemark/log';
import type { StepReport, ToolModule } from '@tidemark/tools';
import {
  createToolServer,
  registerModule,
  SESSION_SERVER_VERSIONS,
  WORKER_DEFAULTS,
  type ExecutionEnd,
  type ToolLogLine,
} from '@tidemark/worker/harness';
import { CallLedger, type EmittedOccurrence } from './call-ledger.js';
export type { EmittedOccurrence } from './call-ledger.js';

export type { RecordedOccurrence, ToolLogLine } from '@tidemark/worker/harness';
import type { SignalAnswerer } from './signals.js';
export type { SignalAnswerer } from './signals.js';
export { runEventSource } from './event-source.js';
export type { EventSourceRun, EventSourceRunOptions } from './event-source.js';

/**
 * The tool authors' harness: a module run the way the worker runs it — the official SDK's server
 * and client over an in-memory transport, retries, timeouts and the v1 bridge included — without
 * Kafka, reporting what a client saw.
 *
 * @example
 * const run = await runTool(weather, 'forecast', { city: 'Oslo' });
 * const session = await openToolSession(weather, { lane: 'stateless' });
 */

export interface ProgressEntry {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** A user's answer to an elicitation. */
export type ElicitAnswer = ElicitResult;

/** What one tool call did, as a client saw it. */
export interface ToolRun {
  readonly result: CallToolResult;
  /** Progress notifications, in order. */
  readonly progress: ReadonlyArray<ProgressEntry>;
  /** `notifications/message` log entries, in order (session lane only). */
  readonly logs: ReadonlyArray<{ level: string; data: unknown }>;
  /**
   * What the tool wrote to `currentExecution().log`, in order (info and above), each line with
   * the tool, stream and attempt it was stamped with.
   */
  readonly logLines: ReadonlyArray<ToolLogLine>;
  /** Executions the call took: 1 plus its retries. */
  readonly attempts: number;
  /**
   * How each execution ended (`retrying` ones are what a client of the worker sees as a reset:
   * the next execution is a new generation).
   */
  readonly executions: ReadonlyArray<Pick<ExecutionEnd, 'outcome' | 'error'> & { attempt: number }>;
  /**
   * The durable steps (`currentExecution().step`) in the order they were taken: `replayed` when a
   * later execution (a retry) got the journaled outcome without running the step again.
   */
  readonly steps: ReadonlyArray<StepReport & { attempt: number }>;
  /** The event occurrences the call emitted (`currentExecution().emit`), checked, in order. */
  readonly emitted: ReadonlyArray<EmittedOccurrence>;
}

export interface ToolSessionOptions {
  /**
   * The lane the client speaks: `session` (2025-11-25, an initialized session) or `stateless`
   * (2026-07-28: no session; push elicitation and sampling are refused there, `inputRequired`
   * works). Default `session`.
   */
  lane?: 'session' | 'stateless';
  /**
   * Answers the tool's elicitation (pushed with `elicitInput`, or asked with `inputRequired`);
   * without it, elicitation is declined.
   */
  elicit?: (params: ElicitRequest['params']) => ElicitResult | Promise<ElicitResult>;
  /** Answers sampling requests; without it the client does not offer sampling. */
  sample?: (
    params: CreateMessageRequest['params'],
  ) => CreateMessageResult | Promise<CreateMessageResult>;
  /**
   * The worker's `maxResultBytes`: a result larger than this fails the call with the error a
   * worker answers (`ProtocolError`, -32603, naming the size and the limit). Default the worker's.
   */
  maxResultBytes?: number;
  /**
   * Time-skipping: a durable sleep (`ex.sleep`) and the wait between a step's tries end at once,
   * their wake times journaled as ever — so a tool that sleeps a day is tested in milliseconds.
   * Default false: they wait, in place (the harness has no other worker to wake them).
   */
  skipWaits?: boolean;
  /**
   * Answers the tool's signals (`ex.signal`) as a POST to its URL would, when the tool waits for
   * one; undefined (or no `signals`) ends the wait as if the signal expired (`SignalTimeoutError`).
   */
  signals?: SignalAnswerer;
}

export interface CallOptions {
  /** Ask for progress (sends a progress token). Default true. */
  progress?: boolean;
  /** Abort to cancel the call, as a client would. */
  signal?: AbortSignal;
  /** Per-call timeout, ms. Default 60,000. */
  timeoutMs?: number;
}

export type RunToolOptions = ToolSessionOptions & CallOptions;

/** One client session on a module's server: several calls, and the client for everything else. */
export interface ToolSession {
  /** The official client, connected: `listTools`, `readResource`, `getPrompt`, … */
  readonly client: Client;
  call(name: string, args: Record<string, unknown>, options?: CallOptions): Promise<ToolRun>;
  close(): Promise<void>;
}

/** Opens a client session on the module's server, as a worker would serve it. */
export async function openToolSession(
  module: ToolModule,
  options: ToolSessionOptions = {},
): Promise<ToolSession> {
  const stateless = options.lane === 'stateless';
  const calls = new CallLedger(module, options);
  const newServer = async () => {
    const server = createToolServer(TEST_SERVER, [module], {
      // As a worker answers: the session lane's revisions, newest first, and the stateless one.
      supportedProtocolVersions: [...SESSION_SERVER_VERSIONS, STATELESS_PROTOCOL_VERSION],
    });
    await registerModule(server, module, calls, { sessionId: 'test-session' });
    return server;
  };
  const client = new Client(
    { name: 'tidemark-test-client', version: '0.0.0' },
    {
      capabilities: {
        elicitation: { form: {} },
        ...(options.sample === undefined ? {} : { sampling: {} }),
      },
      ...(stateless ? { versionNegotiation: { mode: { pin: STATELESS_PROTOCOL_VERSION } } } : {}),
    },
  );
  const logs: Array<{ level: string; data: unknown }> = [];
  client.setNotificationHandler('notifications/message', (notification) => {
    logs.push({ level: notification.params.level, data: notification.params.data });
  });
  client.setRequestHandler('elicitation/create', async (request) =>
    options.elicit === undefined ? { action: 'decline' } : options.elicit(request.params),
  );
  const sample = options.sample;
  if (sample !== undefined)
    client.setRequestHandler('sampling/createMessage', async (request) => sample(request.params));
  const closeServer = stateless
    ? await connectStateless(client, newServer)
    : await connectSession(client, await newServer());
  return {
    client,
    call: async (name, args, callOptions = {}) => {
      const progress: ProgressEntry[] = [];
      const logsBefore = logs.length;
      const linesBefore = calls.lines.length;
      const before = calls.ends.length;
      const stepsBefore = calls.steps.length;
      const emittedBefore = calls.emitted.length;
      const result = await client.callTool(
        { name, arguments: args },
        {
          ...(callOptions.progress === false
            ? {}
            : { onprogress: (p: ProgressEntry) => void progress.push(p) }),
          ...(callOptions.signal === undefined ? {} : { signal: callOptions.signal }),
          timeout: callOptions.timeoutMs ?? 60_000,
        },
      );
      checkResultSize(result, options.maxResultBytes ?? WORKER_DEFAULTS.maxResultBytes);
      const executions = calls.ends.slice(before);
      return {
        result,
        progress,
        logs: logs.slice(logsBefore),
        logLines: calls.lines.slice(linesBefore),
        attempts: Math.max(1, ...executions.map((e) => e.attempt)),
        executions,
        steps: calls.steps.slice(stepsBefore),
        emitted: calls.emitted.slice(emittedBefore),
      };
    },
    close: async () => {
      await client.close();
      await closeServer();
    },
  };
}

/** A result the worker would not carry fails the call as it would there: with the worker's error. */
function checkResultSize(result: CallToolResult, resultBytes: number): void {
  const answer = { jsonrpc: '2.0', id: 0, result };
  const { message } = fitMessage(answer, true, { messageBytes: resultBytes, resultBytes });
  if (message === answer) return;
  const { error } = message as { error: { code: number; message: string; data: unknown } };
  throw new ProtocolError(error.code, error.message, error.data);
}

const TEST_SERVER = { serverInfo: { name: 'tidemark-test', version: '0.0.0' } };

/** The session lane: one server for the session, over an in-memory transport. */
async function connectSession(client: Client, server: McpServer): Promise<() => Promise<void>> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  return () => server.close();
}

/**
 * The stateless lane, as a worker serves it: a fresh server per request (the SDK's handler), the
 * client's HTTP going straight to it, no socket.
 */
async function connectStateless(
  client: Client,
  newServer: () => Promise<McpServer>,
): Promise<() => Promise<void>> {
  const handler = createMcpHandler(newServer);
  const fetch = (input: string | URL | Request, init?: RequestInit) =>
    handler.fetch(new Request(input, init));
  await client.connect(
    new StreamableHTTPClientTransport(new URL('http://tidemark.test/mcp'), { fetch }),
  );
  return () => handler.close();
}

/**
 * Runs one tool of a module the way the worker would, in a session of its own, and reports what
 * a client saw.
 */
export async function runTool(
  module: ToolModule,
  name: string,
  args: Record<string, unknown>,
  options: RunToolOptions = {},
): Promise<ToolRun> {
  const session = await openToolSession(module, options);
  try {
    return await session.call(name, args, options);
  } finally {
    await session.close();
  }
}
