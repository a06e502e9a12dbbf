import {
  PerRequestHTTPServerTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type MessageClassification,
} from '@modelcontextprotocol/server';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { StreamHeadStore, StreamWriter } from '@tidemark/log';
import {
  requestStreamId,
  STATELESS_PROTOCOL_VERSION,
  type RequestId,
  type SessionId,
  type StreamId,
} from '@tidemark/protocol';
import { registerModule, type ExecutionEnd } from './retries.js';
import { authInfoOf } from './auth-info.js';
import { StreamRun } from './stream-run.js';
import type { ToolLogger } from './tool-logger.js';
import { createToolServer } from './tool-server.js';
import type { ToolModule } from './tool-module.js';

export interface StatelessExchangeOptions {
  /** The request's routing key (it has no session). */
  key: SessionId;
  /** The subject the gateway authenticated, if it authenticates. */
  subject?: string | undefined;
  message: JSONRPCRequest;
  /** The gateway's classification of the request, which binds the server to its revision. */
  classification: MessageClassification;
  modules: readonly ToolModule[];
  serverInfo: { name: string; version: string };
  instructions?: string | undefined;
  writer: StreamWriter;
  heads: StreamHeadStore;
  onExecution?: (event: { stream: StreamId; attempt: number; cause: string }) => void;
  logger?: ToolLogger | undefined;
  onExecutionEnd?: ((end: ExecutionEnd) => void) | undefined;
}

/**
 * One request of the stateless lane (2026-07-28), served the SDK's own stateless way — a fresh
 * `McpServer` on a `PerRequestHTTPServerTransport` — with what it answers written to `events` like
 * any stream: stamped, a generation per execution, ending with a terminal record.
 */
export class StatelessExchange {
  private readonly abort = new AbortController();
  private execution: StreamRun | undefined;
  private finished = false;
  readonly stream: StreamId;

  constructor(private readonly options: StatelessExchangeOptions) {
    this.stream = requestStreamId(options.message.id);
  }

  /** The client closed its response stream: the call is cancelled. */
  cancel(): void {
    this.abort.abort(new Error('the client closed the response stream'));
  }

  /** Runs the exchange to its terminal record; false when the stream had already finished. */
  async run(): Promise<boolean> {
    const { key, message, writer, heads } = this.options;
    const head = await heads.get(key, this.stream);
    if (head?.terminal !== undefined) return false;
    const run = await StreamRun.begin(
      { ...this.options, writer },
      key,
      this.stream,
      head,
      () => this.abort.signal.aborted,
    );
    this.execution = run;
    run.reportStart();

    const server = createToolServer(this.options, this.options.modules, {
      supportedProtocolVersions: [...SUPPORTED_PROTOCOL_VERSIONS, STATELESS_PROTOCOL_VERSION],
    });
    const host = {
      execution: (requestId: RequestId) => ({
        sessionId: key,
        stream: requestStreamId(requestId),
        generation: run.generation.generation,
        attempt: run.attempt,
        ...(this.options.subject === undefined ? {} : { subject: this.options.subject }),
      }),
      retry: () => run.retry(),
      onExecutionEnd: (end: ExecutionEnd) => this.options.onExecutionEnd?.(end),
      logger: this.options.logger,
    };
    for (const module of this.options.modules)
      await registerModule(server, module, host, { sessionId: key });
    const transport = new PerRequestHTTPServerTransport({
      classification: this.options.classification,
      responseMode: 'sse',
      keepAliveMs: 0,
    });
    await server.connect(transport);
    try {
      const request = new Request('http://tidemark.invalid/mcp', {
        method: 'POST',
        signal: this.abort.signal,
      });
      const authInfo = authInfoOf(this.options.subject);
      const response = await transport
        .handleMessage(message, { request, ...(authInfo === undefined ? {} : { authInfo }) })
        .catch(() => undefined);
      if (response !== undefined) await this.relay(response);
    } finally {
      await this.finish(undefined);
      await server.close().catch(() => undefined);
    }
    return true;
  }

  /** Writes what the SDK answered — an SSE stream or a JSON body — to the log. */
  private async relay(response: Response): Promise<void> {
    if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const text = await response.text();
      if (text !== '') await this.write(JSON.parse(text) as JSONRPCMessage);
      return;
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
      if (done) return;
      if (value.data !== '') await this.write(JSON.parse(value.data) as JSONRPCMessage);
    }
  }

  private async write(message: JSONRPCMessage): Promise<void> {
    if (this.finished) return;
    const isFinal =
      'id' in message && message.id === this.options.message.id && !('method' in message);
    if (isFinal) return this.finish(message);
    await this.execution?.generation.send(message);
  }

  private async finish(message: JSONRPCMessage | undefined): Promise<void> {
    if (this.finished || this.execution === undefined) return;
    this.finished = true;
    await this.execution.generation.finish(message);
  }
}
