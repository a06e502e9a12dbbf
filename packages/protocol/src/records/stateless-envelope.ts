import { createParser } from 'eventsource-parser';
import { STATELESS_PROTOCOL_VERSION } from '../wire/revisions.js';
import { MetaKeys } from '../wire/meta-keys.js';

// What a 2026-07-28 client sends and reads over Streamable HTTP, for Tidemark's own clients
// (`@tidemark/client`, `tidemark check`): every request carries its revision, client info and
// capabilities in `_meta`, and names its method (and its tool or task) in headers.

/** One self-contained JSON-RPC request of the stateless lane, and the headers that go with it. */
export function statelessRequest(
  method: string,
  params: Readonly<Record<string, unknown>>,
  client: {
    readonly clientInfo: { readonly name: string; readonly version: string };
    readonly capabilities: Readonly<Record<string, unknown>>;
    /** `Mcp-Name`: the tool or the task the request is about (balancers may route on it). */
    readonly name?: string;
  },
): { headers: Record<string, string>; body: string } {
  return {
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': STATELESS_PROTOCOL_VERSION,
      'Mcp-Method': method,
      ...(client.name === undefined ? {} : { 'Mcp-Name': client.name }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: crypto.randomUUID(),
      method,
      params: {
        ...params,
        _meta: {
          [MetaKeys.protocolVersion]: STATELESS_PROTOCOL_VERSION,
          [MetaKeys.clientInfo]: client.clientInfo,
          [MetaKeys.clientCapabilities]: client.capabilities,
        },
      },
    }),
  };
}

/**
 * The answer in a response body — JSON, or the last result or error of an SSE stream — or
 * undefined when there is none (or it is not JSON-RPC).
 */
export function answerInBody(
  text: string,
): { result: Record<string, unknown> } | { error: Record<string, unknown> } | undefined {
  const data = text.trimStart().startsWith('{') ? [text] : sseData(text);
  for (const raw of data.reverse()) {
    let message: unknown;
    try {
      message = JSON.parse(raw);
    } catch {
      continue;
    }
    if (typeof message !== 'object' || message === null) continue;
    const { result, error } = message as { result?: unknown; error?: unknown };
    if (typeof result === 'object' && result !== null)
      return { result: result as Record<string, unknown> };
    if (typeof error === 'object' && error !== null)
      return { error: error as Record<string, unknown> };
  }
  return undefined;
}

/** The data of every event of a complete SSE body (priming events and comments have none). */
function sseData(text: string): string[] {
  const data: string[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if (event.data !== '') data.push(event.data);
    },
  });
  parser.feed(text);
  parser.feed('\n\n'); // a body cut after its last event's data still ends that event
  return data;
}
