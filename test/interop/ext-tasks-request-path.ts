// The request path `@modelcontextprotocol/ext-tasks` needs from its host to drive a 2026-07-28
// Tasks server (its README: "a 2026-07-28 Tasks server additionally requires rawDispatch and
// v2RequestFraming"): the SDK client has no public way to send the extension's wire shapes, so the
// host posts them itself. This is that host code for Tidemark, as small as it can be; the interop
// suite runs it and docs/interop/ext-tasks.md shows it to users.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createApplicationInputHandler,
  createTaskSessionFromClient,
  type ApplicationElicitResult,
  type JsonRpcResponse,
  type RawClientDispatch,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import { createParser } from 'eventsource-parser';

const REVISION = '2026-07-28';
const CLIENT_INFO = { name: 'ext-tasks-host', version: '1.0.0' };
const CAPABILITIES = {
  elicitation: { form: {} },
  extensions: { 'io.modelcontextprotocol/tasks': {} },
};

type Message = { id?: unknown; result?: unknown; error?: unknown };

/** POSTs one framed request (ext-tasks gives method and params; the host adds the envelope). */
export function tidemarkDispatch(url: string, sent?: string[]): RawClientDispatch {
  let next = 0;
  return async (request, options) => {
    const id = `ext-${++next}`;
    const { method, params = {} } = request as { method: string; params?: Record<string, unknown> };
    sent?.push(method);
    const name = params['name'] ?? params['taskId'];
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': REVISION,
        // 2026-07-28 routes by headers; they must match the body.
        'Mcp-Method': method,
        ...(typeof name === 'string' ? { 'Mcp-Name': name } : {}),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
      ...(options?.signal === undefined ? {} : { signal: options.signal }),
    });
    const answer = responseTo(id, await response.text(), response.headers.get('content-type'));
    if (answer === undefined)
      throw new Error(`${method}: HTTP ${response.status} without a response`);
    return answer;
  };
}

/** The JSON-RPC response to `id` in a JSON body or an SSE stream. */
function responseTo(id: string, text: string, type: string | null): JsonRpcResponse | undefined {
  const messages: Message[] = [];
  if (type?.includes('text/event-stream') === true) {
    createParser({
      onEvent: (event) => void messages.push(JSON.parse(event.data) as Message),
    }).feed(text);
  } else if (text.length > 0) messages.push(JSON.parse(text) as Message);
  const found = messages.find((m) => m.id === id || (m.id === null && m.error !== undefined));
  if (found === undefined) return undefined;
  return found.error === undefined
    ? ({ kind: 'result', result: found.result } as JsonRpcResponse)
    : ({ kind: 'error', error: found.error } as JsonRpcResponse);
}

/** An ext-tasks session on a Tidemark endpoint; `answer` replies to each elicitation. */
export async function extTasksSession(
  url: string,
  answer: (message: string) => ApplicationElicitResult = () => ({ action: 'decline' }),
  /** Collects the method of every request the session sends through the path. */
  sent?: string[],
): Promise<{
  session: TaskEnabledSession;
  negotiated: string | undefined;
  close(): Promise<void>;
  /** Closes the SDK client only: the session's unsettled tasks are not cancelled. */
  closeClient(): Promise<void>;
}> {
  const client = new Client(CLIENT_INFO, {
    capabilities: CAPABILITIES,
    versionNegotiation: { mode: { pin: REVISION } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const refuse = (kind: string) => () => Promise.reject(new Error(`this host has no ${kind}`));
  const session = createTaskSessionFromClient(client, {
    // One id for the service, whichever replica: a task reference made on one resumes on another.
    endpointId: 'tidemark',
    rawDispatch: tidemarkDispatch(url, sent),
    v2RequestFraming: {
      protocolVersion: REVISION,
      clientInfo: CLIENT_INFO,
      clientCapabilities: CAPABILITIES,
    },
    onInputRequest: createApplicationInputHandler({
      elicitation: (request) => {
        const message = request.params['message'];
        return answer(typeof message === 'string' ? message : '');
      },
      sampling: refuse('sampling'),
      roots: refuse('roots'),
    }),
  });
  return {
    session,
    negotiated: client.getNegotiatedProtocolVersion(),
    close: async () => {
      await session.close();
      await client.close();
    },
    closeClient: () => client.close(),
  };
}
