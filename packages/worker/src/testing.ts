import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer, type CallToolResult } from '@modelcontextprotocol/server';
import type { RequestId, WorkerEpoch } from '@tidemark/protocol';
import type { Execution } from './execution.js';
import { registerModule } from './retries.js';
import type { ToolModule } from './tool-module.js';

export interface ProgressEntry {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** A user's answer to an elicitation. */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

/** What one tool call did, as a client saw it. */
export interface ToolRun {
  readonly result: CallToolResult;
  /** Progress notifications, in order. */
  readonly progress: ReadonlyArray<ProgressEntry>;
  /** `notifications/message` log entries, in order. */
  readonly logs: ReadonlyArray<{ level: string; data: unknown }>;
  /** Executions the call took: 1 plus its retries. */
  readonly attempts: number;
}

export interface RunToolOptions {
  /** Ask for progress (sends a progress token). Default true. */
  progress?: boolean;
  /** Abort to cancel the call, as a client would. */
  signal?: AbortSignal;
  /** Answers the tool's elicitation requests; without it, elicitation is declined. */
  elicit?: (params: Record<string, unknown>) => ElicitAnswer | Promise<ElicitAnswer>;
  /** Per-call timeout, ms. Default 60,000. */
  timeoutMs?: number;
}

/**
 * Runs one tool of a module the way the worker would — the official SDK's server and client over
 * an in-memory transport, retries included — without Kafka, and reports what a client saw.
 */
export async function runTool(
  module: ToolModule,
  name: string,
  args: Record<string, unknown>,
  options: RunToolOptions = {},
): Promise<ToolRun> {
  const server = new McpServer(
    { name: 'tidemark-test', version: '0.0.0' },
    { capabilities: { logging: {} } },
  );
  let attempts = 0;
  let attempt = 1;
  const epoch = '0'.repeat(20) as WorkerEpoch;
  const host = {
    execution: (requestId: RequestId): Execution => {
      attempts = Math.max(attempts, attempt);
      return {
        sessionId: 'test-session',
        stream: String(requestId),
        generation: { epoch, attempt },
        attempt,
      };
    },
    retry: () => {
      attempt++;
      return Promise.resolve();
    },
  };
  await registerModule(server, module, host, { sessionId: 'test-session' });
  const client = new Client(
    { name: 'tidemark-test-client', version: '0.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  const logs: Array<{ level: string; data: unknown }> = [];
  const progress: ProgressEntry[] = [];
  client.setNotificationHandler('notifications/message', (notification) => {
    logs.push({ level: notification.params.level, data: notification.params.data });
  });
  client.setRequestHandler('elicitation/create', async (request) => {
    if (options.elicit === undefined) return { action: 'decline' };
    const answer = await options.elicit(request.params);
    return { ...answer };
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  try {
    const result = await client.callTool(
      { name, arguments: args },
      {
        ...(options.progress === false
          ? {}
          : { onprogress: (p: ProgressEntry) => void progress.push(p) }),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        timeout: options.timeoutMs ?? 60_000,
      },
    );
    return { result, progress, logs, attempts };
  } finally {
    await client.close();
    await server.close();
  }
}
