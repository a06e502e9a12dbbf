import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Io } from './commands.js';
import { parseFlags, str, UsageError } from './options.js';

/**
 * `tidemark check <mcp-url>`: is this deployment serving? The gateway's `/readyz` (broker reachable,
 * topics valid), then a 2026-07-28 `server/discover` through the log to a worker and back. Without a
 * token, a 401 naming its authentication counts as serving (the gateway guards itself); with
 * `--token-file`, discover must answer. `helm test` runs it against the release.
 */
export async function check(args: readonly string[], io: Io): Promise<void> {
  const { values, positionals } = parseFlags(args, { 'token-file': { type: 'string' } });
  const raw = positionals[0];
  if (raw === undefined)
    throw new UsageError('<mcp-url>: required, e.g. http://mcp.example.com/mcp');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`<mcp-url>: not a URL: "${raw}"`);
  }
  const tokenFile = str(values['token-file']);
  const token =
    tokenFile === undefined ? undefined : readFileSync(resolve(io.cwd, tokenFile), 'utf8').trim();

  const ready = await fetch(new URL('/readyz', url));
  if (ready.status !== 200)
    throw new Error(`${url.origin}/readyz answered ${ready.status}: not ready`);
  io.out(`ready: ${url.origin}/readyz`);

  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'server/discover',
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'tidemark-check', version: '0.1.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
  const text = await response.text();
  if (response.status === 401 && token === undefined) {
    io.out(
      `serving, authentication required (${response.headers.get('www-authenticate') ?? 'Bearer'})`,
    );
    return;
  }
  const answer = parseAnswer(text) as
    { result?: { supportedVersions?: string[]; _meta?: Record<string, unknown> } } | undefined;
  if (response.status !== 200 || answer?.result === undefined)
    throw new Error(`server/discover answered ${response.status}: ${text.slice(0, 200)}`);
  const info = answer.result._meta?.['io.modelcontextprotocol/serverInfo'] as
    { name?: string; version?: string } | undefined;
  const versions = (answer.result.supportedVersions ?? []).join(', ');
  io.out(
    `serving: ${info?.name ?? 'an MCP server'}${info?.version === undefined ? '' : ` ${info.version}`} (server/discover through a worker; protocol ${versions})`,
  );
}

/** The JSON body, or the last `data:` message of an SSE body. */
function parseAnswer(text: string): unknown {
  const data = text.trimStart().startsWith('{')
    ? [text]
    : text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .filter((line) => line !== '');
  try {
    return data.length === 0 ? undefined : (JSON.parse(data[data.length - 1]!) as unknown);
  } catch {
    return undefined;
  }
}
