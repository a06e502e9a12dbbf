import {
  PerRequestHTTPServerTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageClassification,
} from '@modelcontextprotocol/server';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import {
  formatGeneration,
  STATELESS_PROTOCOL_VERSION,
  type RequestId,
  type RoutingKey,
} from '@tidemark/protocol';
import { attachEventMethods } from '../events/index.js';
import type { EventService } from '../events/index.js';
import { registerModule, type ExecutionEnd } from './retries.js';
import type { CallSteps } from './steps.js';
import type { StreamRun } from './stream-run.js';
import { authInfoOf, createToolServer, type ServerIdentity } from './tool-server.js';
import type { ToolLogger, ToolModule } from '@tidemark/tools';

/** What one stateless request (or one round of a task) is served with. */
export interface InvocationOptions extends ServerIdentity {
  /** The request's routing key (it has no session). */
  readonly key: RoutingKey;
  /** The subject the gateway authenticated, if it authenticates. */
  readonly subject?: string | undefined;
  /** The gateway's classification of the request, which binds the server to its revision. */
  readonly classification: MessageClassification;
  readonly modules: readonly ToolModule[];
  /** The Events extension, when the modules offer event types. */
  readonly events?: EventService | undefined;
  /** Whether the server offers the Tasks extension (in `server/discover`). */
  readonly tasks: boolean;
  readonly logger?: ToolLogger | undefined;
  readonly onExecutionEnd?: ((end: ExecutionEnd) => void) | undefined;
}

/**
 * Serves one 2026-07-28 request the SDK's own stateless way — a fresh `McpServer` on a
 * `PerRequestHTTPServerTransport` — passing each message it sends before its answer to `onMessage`
 * and resolving with the answer (undefined when the request was aborted first).
 */
export async function invokeStateless(
  options: InvocationOptions,
  message: JSONRPCRequest,
  run: StreamRun,
  steps: CallSteps,
  signal: AbortSignal,
  onMessage: (message: JSONRPCMessage) => Promise<void>,
): Promise<JSONRPCMessage | undefined> {
  const server = createToolServer(
    options,
    options.modules,
    { supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSION] },
    options.tasks,
  );
  const host = {
    execution: (_requestId: RequestId) => ({
      sessionId: options.key,
      stream: run.stream,
      generation: run.generation.generation,
      attempt: run.attempt,
      ...(options.subject === undefined ? {} : { subject: options.subject }),
      step: steps.forExecution(formatGeneration(run.generation.generation)),
    }),
    retry: () => run.retry(),
    onExecutionEnd: (end: ExecutionEnd) => options.onExecutionEnd?.(end),
    logger: options.logger,
    emitAs: options.events?.emitAs,
  };
  for (const module of options.modules)
    await registerModule(server, module, host, { sessionId: options.key });
  attachEventMethods(server, options.events);
  const transport = new PerRequestHTTPServerTransport({
    classification: options.classification,
    responseMode: 'sse',
    keepAliveMs: 0,
  });
  await server.connect(transport);
  try {
    const request = new Request('http://tidemark.invalid/mcp', { method: 'POST', signal });
    const authInfo = authInfoOf(options.subject);
    const response = await transport
      .handleMessage(message, { request, ...(authInfo === undefined ? {} : { authInfo }) })
      .catch(() => undefined);
    return response === undefined ? undefined : await relay(response, message.id, onMessage);
  } finally {
    await server.close().catch(() => undefined);
  }
}

/** Reads what the SDK answered — an SSE stream or a JSON body — up to the request's answer. */
async function relay(
  response: Response,
  id: RequestId,
  onMessage: (message: JSONRPCMessage) => Promise<void>,
): Promise<JSONRPCMessage | undefined> {
  const isAnswer = (message: JSONRPCMessage) =>
    'id' in message && message.id === id && !('method' in message);
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const text = await response.text();
    if (text === '') return undefined;
    const message = JSON.parse(text) as JSONRPCMessage;
    if (isAnswer(message)) return message;
    await onMessage(message);
    return undefined;
  }
  const reader = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  for (;;) {
    // A cancelled request aborts the body: what was written stays, the stream ends here.
    const { value, done } = await reader
      .read()
      .catch(() => ({ value: undefined, done: true as const }));
    if (done) return undefined;
    if (value.data === '') continue;
    const message = JSON.parse(value.data) as JSONRPCMessage;
    if (isAnswer(message)) {
      await reader.cancel().catch(() => undefined);
      return message;
    }
    await onMessage(message);
  }
}
