import {
  PerRequestHTTPServerTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageClassification,
} from '@modelcontextprotocol/server';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { STATELESS_PROTOCOL_VERSION, type RequestId } from '@tidemark/protocol';
import { attachEventMethods } from '../events/index.js';
import type { CallEnvironment } from './call-environment.js';
import type { CallExecution } from './call-execution.js';
import { registerModule } from './retries.js';
import { createToolServer } from './tool-server.js';
import { scopeRefusal } from './scope-challenge.js';
import { toolCallOf } from './call-audit.js';

/** What one stateless request (or one round of a task) is served with, beyond its execution. */
export interface InvocationRequest {
  /** The gateway's classification of the request, which binds the server to its revision. */
  readonly classification: MessageClassification;
  /** Whether the server offers the Tasks extension (in `server/discover`). */
  readonly tasks: boolean;
}

/**
 * Serves one 2026-07-28 request the SDK's own stateless way — a fresh `McpServer` on a
 * `PerRequestHTTPServerTransport` — in `execution`: passes each message the server sends before
 * its answer to `onMessage` and resolves with the answer (undefined when the request was aborted
 * first).
 */
export async function invokeStateless(
  environment: CallEnvironment,
  execution: CallExecution,
  request: InvocationRequest,
  message: JSONRPCRequest,
  signal: AbortSignal,
  onMessage: (message: JSONRPCMessage) => Promise<void>,
): Promise<JSONRPCMessage | undefined> {
  // Read once: `dev --watch` may swap them, and one call runs on one set.
  const { modules } = environment;
  const server = createToolServer(
    environment,
    modules,
    { supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSION] },
    request.tasks,
  );
  const host = execution.toolHost();
  for (const module of modules)
    await registerModule(server, module, host, { sessionId: execution.owner });
  // A worker whose modules offer no event types has no Events service: nothing to attach.
  if (environment.events !== undefined) attachEventMethods(server, environment.events);
  const transport = new PerRequestHTTPServerTransport({
    classification: request.classification,
    responseMode: 'sse',
    keepAliveMs: 0,
  });
  await server.connect(transport);
  try {
    const authInfo = execution.authInfo;
    // Refused here, as a session's call is (the SDK's transport would answer an HTTP 403 the
    // gateway has long since answered otherwise).
    const error = await scopeRefusal(server.resolveScopeChallenge, message, authInfo);
    if (error !== undefined) {
      await execution.audit({ ...toolCallOf(message), outcome: 'refused', reason: error });
      return { jsonrpc: '2.0', id: message.id, error };
    }
    const http = new Request('http://tidemark.invalid/mcp', { method: 'POST', signal });
    const response = await transport
      .handleMessage(message, { request: http, ...(authInfo === undefined ? {} : { authInfo }) })
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
