import { EventSourceParserStream } from 'eventsource-parser/stream';

/** A raw MCP-over-HTTP client for tests that need to see the wire: status codes, SSE ids, resets. */

export interface SseEvent {
  id: string | undefined;
  data: string;
}

export const MCP_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
} as const;

/** Parses an SSE body incrementally; `onEvent` returns false to stop reading (the connection is dropped). */
export async function readSse(
  response: Response,
  onEvent: (event: SseEvent) => boolean | void,
  controller?: AbortController,
): Promise<void> {
  const reader = response
    .body!.pipeThrough(new TextDecoderStream())
    .pipeThrough(new EventSourceParserStream())
    .getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      if (onEvent({ id: value.id, data: value.data }) === false) {
        controller?.abort();
        await reader.cancel().catch(() => undefined);
        return;
      }
    }
  } catch (error) {
    if (controller?.signal.aborted) return;
    throw error;
  }
}

/** The `_meta` envelope a 2026-07-28 request carries instead of a session. */
export const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

/** The body of a legacy-lane `initialize`. */
export const initializeRequest = (version = '2025-11-25', id = 0) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: {
    protocolVersion: version,
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
});

export class RawMcpClient {
  readonly url: string;
  /** A session to join (another replica's client), or one `initialize` will set. */
  session: string;

  // Plain fields, no parameter properties: benchmarks run this file under Node's type stripping.
  constructor(url: string, session = '') {
    this.url = url;
    this.session = session;
  }

  async initialize(version = '2025-11-25'): Promise<void> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: MCP_HEADERS,
      body: JSON.stringify(initializeRequest(version)),
    });
    if (response.status !== 200)
      throw new Error(`initialize: ${response.status} ${await response.text()}`);
    this.session = response.headers.get('mcp-session-id') ?? '';
    await readSse(response, (event) => (event.data === '' ? undefined : false));
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  post(
    message: unknown,
    headers: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> {
    return fetch(this.url, {
      method: 'POST',
      headers: {
        ...MCP_HEADERS,
        'Mcp-Session-Id': this.session,
        'MCP-Protocol-Version': '2025-11-25',
        ...headers,
      },
      body: JSON.stringify(message),
      ...(signal === undefined ? {} : { signal }),
    });
  }

  resume(lastEventId: string, signal?: AbortSignal): Promise<Response> {
    return fetch(this.url, {
      headers: {
        Accept: 'text/event-stream',
        'Mcp-Session-Id': this.session,
        'MCP-Protocol-Version': '2025-11-25',
        'Last-Event-ID': lastEventId,
      },
      ...(signal === undefined ? {} : { signal }),
    });
  }

  /** Calls `count` and reads its stream until `stopAfter` progress events, then drops it; returns the ids seen. */
  async callCount(
    id: number,
    to: number,
    delayMs: number,
    stopAfter = Infinity,
  ): Promise<{ ids: string[]; messages: Array<Record<string, unknown>> }> {
    const controller = new AbortController();
    const response = await this.post(
      {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'count', arguments: { to, delayMs }, _meta: { progressToken: `p${id}` } },
      },
      {},
      controller.signal,
    );
    const ids: string[] = [];
    const messages: Array<Record<string, unknown>> = [];
    let progress = 0;
    await readSse(
      response,
      (event) => {
        if (event.id !== undefined) ids.push(event.id);
        if (event.data === '') return;
        const message = JSON.parse(event.data) as Record<string, unknown>;
        messages.push(message);
        if (message['method'] === 'notifications/progress' && ++progress >= stopAfter) return false;
      },
      controller,
    );
    return { ids, messages };
  }
}
