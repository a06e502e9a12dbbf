import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Io } from '../io.js';
import { answerInBody, MetaKeys, statelessRequest } from '@tidemark/protocol';
import { parseFlags, str, UsageError } from '../options.js';

/** `tidemark check`'s flags, as its help lists them. */
export const CHECK_FLAGS = { 'token-file': { type: 'string' } } as const;

/**
 * `tidemark check <mcp-url>`: is this deployment serving? The gateway's `/readyz` (broker reachable,
 * topics valid), then a 2026-07-28 `server/discover` through the log to a worker and back. Without a
 * token, a 401 naming its authentication counts as serving (the gateway guards itself); with
 * `--token-file`, discover must answer. `helm test` runs it against the release.
 */
export async function check(args: readonly string[], io: Io): Promise<void> {
  const { values, positionals } = parseFlags(args, CHECK_FLAGS);
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

  const request = statelessRequest(
    'server/discover',
    {},
    { clientInfo: { name: 'tidemark-check', version: '0.1.0' }, capabilities: {} },
  );
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      ...request.headers,
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    body: request.body,
  });
  const text = await response.text();
  if (response.status === 401 && token === undefined) {
    io.out(
      `serving, authentication required (${response.headers.get('www-authenticate') ?? 'Bearer'})`,
    );
    return;
  }
  const answer = answerInBody(text);
  if (response.status !== 200 || answer === undefined || !('result' in answer))
    throw new Error(`server/discover answered ${response.status}: ${text.slice(0, 200)}`);
  const { _meta: meta, supportedVersions } = answer.result as {
    _meta?: Record<string, unknown>;
    supportedVersions?: string[];
  };
  const info = meta?.[MetaKeys.serverInfo] as { name?: string; version?: string } | undefined;
  const versions = (supportedVersions ?? []).join(', ');
  io.out(
    `serving: ${info?.name ?? 'an MCP server'}${info?.version === undefined ? '' : ` ${info.version}`} (server/discover through a worker; protocol ${versions})`,
  );
}
