import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ErrorCodes, TidemarkError } from '@tidemark/protocol';
import { addressClass, mayDeliverTo } from './address-policy.js';

export interface CallbackPolicy {
  /**
   * http to a loopback address, for development and tests only (`--allow-loopback-webhooks`).
   * @default false
   */
  readonly allowLoopback?: boolean;
  /**
   * What refusals call the URL (`the <subject> URL must use https`): a hosted MCP server's URL
   * is held to the same rules.
   * @default 'callback'
   */
  readonly subject?: string;
}

/** A callback URL and the address its deliveries go to, checked once and then pinned. */
export interface CallbackTarget {
  readonly url: URL;
  readonly address: string;
  readonly family: 4 | 6;
}

/** The resolver a target is looked up with: `dns.lookup`'s `all` form (injectable in tests). */
export type Lookup = (
  hostname: string,
) => Promise<ReadonlyArray<{ readonly address: string; readonly family: number }>>;

const MAX_URL_LENGTH = 2048;

/**
 * Checks a callback URL as a client gave it: https (http only to loopback when allowed), no
 * credentials, no fragment, and an IP literal must be an address deliveries may go to. The URL is
 * kept exactly as given (its query may carry the client's routing key). Refusals say why.
 */
export function parseCallbackUrl(raw: unknown, policy: CallbackPolicy = {}): URL {
  const the = `the ${policy.subject ?? 'callback'}`;
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL_LENGTH)
    throw refused(`${the} URL must be a string of 1..${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused(`${the} URL is not a URL`);
  }
  const loopbackHttp =
    url.protocol === 'http:' && policy.allowLoopback === true && isLoopbackHost(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp)
    throw refused(`${the} URL must use https, not ${url.protocol.replace(/:$/, '')}`);
  if (url.username !== '' || url.password !== '')
    throw refused(`${the} URL must not carry credentials`);
  if (url.hash !== '') throw refused(`${the} URL must not have a fragment`);
  const literal = bareAddress(url.hostname);
  if (isIP(literal) !== 0 && !mayDeliverTo(literal, policy.allowLoopback === true))
    throw refused(`${the} URL names a ${describe(literal)} address`);
  return url;
}

/**
 * Resolves a callback's host and refuses it unless every address it resolves to may be delivered
 * to (one private answer among public ones is how DNS rebinding starts). The first address is
 * the one deliveries are pinned to.
 */
export async function resolveCallback(
  url: URL,
  policy: CallbackPolicy = {},
  lookup: Lookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true }),
): Promise<CallbackTarget> {
  const the = `the ${policy.subject ?? 'callback'}`;
  const literal = bareAddress(url.hostname);
  let answers: ReadonlyArray<{ readonly address: string; readonly family: number }>;
  if (isIP(literal) !== 0) answers = [{ address: literal, family: isIP(literal) }];
  else {
    try {
      answers = await lookup(url.hostname);
    } catch (error) {
      throw new TidemarkError(
        ErrorCodes.webhookRefused,
        `${the} host ${url.hostname} does not resolve`,
        { cause: error, retryable: true },
      );
    }
  }
  const first = answers[0];
  if (first === undefined) throw refused(`${the} host ${url.hostname} has no address`);
  for (const { address } of answers)
    if (!mayDeliverTo(address, policy.allowLoopback === true))
      throw refused(`${the} host ${url.hostname} resolves to a ${describe(address)} address`);
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || addressClass(bareAddress(hostname)) === 'loopback';
}

/** `[::1]` → `::1`: URL keeps IPv6 literals in brackets. */
function bareAddress(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

function describe(address: string): string {
  const kind = addressClass(address);
  return kind === 'loopback' ? 'loopback' : 'private, link-local or otherwise non-public';
}

function refused(message: string): TidemarkError {
  return new TidemarkError(ErrorCodes.webhookRefused, message);
}
