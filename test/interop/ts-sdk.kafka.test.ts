// The official TypeScript clients, unmodified and with their default options unless a scenario
// says otherwise: v2 (@modelcontextprotocol/client) and v1 (@modelcontextprotocol/sdk).
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallOutcome, SessionDriver } from './session-suite.js';
import { sessionSuite } from './session-suite.js';

type ToolResult = { content?: unknown; isError?: boolean | undefined };

const INFO = { name: 'tidemark-interop', version: '1.0.0' };
// v2 pins only modern revisions (2026-07-28, the stateless lane); otherwise it initializes with its latest.
const REVISIONS = [undefined, '2026-07-28'];

function outcomeOf(result: ToolResult, progress: number[]): CallOutcome {
  const first = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0];
  return {
    progress,
    ...(first?.text === undefined ? {} : { text: first.text }),
    isError: result.isError === true,
  };
}

const failed = (error: unknown, progress: number[]): CallOutcome => ({
  progress,
  error: error instanceof Error ? error.message : String(error),
});

/** Runs `body` with a connected client, closing it after. */
async function using<C extends { close(): Promise<void> }, T>(
  client: C,
  connect: Promise<void>,
  body: (client: C) => Promise<T>,
): Promise<T> {
  await connect;
  try {
    return await body(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

function v2(revision?: string, asked?: string[]) {
  const client = new ClientV2(INFO, {
    capabilities: { elicitation: { form: {} } },
    ...(revision === undefined ? {} : { versionNegotiation: { mode: { pin: revision } } }),
  });
  client.setRequestHandler('elicitation/create', (request) => {
    asked?.push(String(request.params.message));
    return Promise.resolve({ action: 'accept', content: { confirm: true } });
  });
  return client;
}

const tsV2: SessionDriver = {
  revisions: REVISIONS,
  handshake: (url, revision) => {
    const client = v2(revision);
    return using(client, client.connect(new TransportV2(new URL(url))), async (c) => ({
      negotiated: c.getNegotiatedProtocolVersion() ?? 'none',
      tools: (await c.listTools()).tools.map((t) => t.name),
    }));
  },
  call: (url, name, args, onProgress) => {
    const client = v2();
    const progress: number[] = [];
    return using(client, client.connect(new TransportV2(new URL(url))), (c) =>
      c
        .callTool(
          { name, arguments: args },
          { onprogress: (p) => (progress.push(p.progress), onProgress?.(p.progress)) },
        )
        .then(
          (result) => outcomeOf(result, progress),
          (error: unknown) => failed(error, progress),
        ),
    );
  },
  input: (url) => {
    const asked: string[] = [];
    const client = v2(undefined, asked);
    return using(client, client.connect(new TransportV2(new URL(url))), async (c) => ({
      asked,
      outcome: outcomeOf(
        await c.callTool({ name: 'confirm_deploy', arguments: { env: 'staging' } }),
        [],
      ),
    }));
  },
};

function v1(asked?: string[]) {
  const client = new ClientV1(INFO, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked?.push(request.params.message);
    return Promise.resolve({ action: 'accept', content: { confirm: true } });
  });
  const transport = (url: string) => new TransportV1(new URL(url));
  return { client, transport };
}

const tsV1: SessionDriver = {
  // v1 has no way to pin a revision: it offers its latest and takes what the server answers.
  revisions: [undefined],
  handshake: (url) => {
    const { client, transport } = v1();
    return using(client, client.connect(transport(url)), async (c) => ({
      negotiated: c.getServerVersion() === undefined ? 'none' : negotiatedV1(c),
      tools: (await c.listTools()).tools.map((t) => t.name),
    }));
  },
  call: (url, name, args, onProgress) => {
    const { client, transport } = v1();
    const progress: number[] = [];
    return using(client, client.connect(transport(url)), (c) =>
      c
        .callTool({ name, arguments: args }, undefined, {
          onprogress: (p) => (progress.push(p.progress), onProgress?.(p.progress)),
        })
        .then(
          (result) => outcomeOf(result as ToolResult, progress),
          (error: unknown) => failed(error, progress),
        ),
    );
  },
  input: (url) => {
    const asked: string[] = [];
    const { client, transport } = v1(asked);
    return using(client, client.connect(transport(url)), async (c) => ({
      asked,
      outcome: outcomeOf(
        (await c.callTool({ name: 'confirm_deploy', arguments: { env: 'staging' } })) as ToolResult,
        [],
      ),
    }));
  },
};

/** The revision a v1 client agreed: its transport sends it on every request after initialize. */
function negotiatedV1(client: ClientV1): string {
  const transport = client.transport as { protocolVersion?: string } | undefined;
  return transport?.protocolVersion ?? 'unknown';
}

sessionSuite('ts-v2', tsV2);
sessionSuite('ts-v1', tsV1);
