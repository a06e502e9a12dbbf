import type { Request } from 'express';
import type { Caller } from '@tidemark/protocol';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import { HttpRefusals } from '../http/http-refusals.js';
import { LOOPBACK_ADDRESSES } from '../http/loopback.js';
import { pass, refuse, type Checked } from '../http/http-answers.js';
import type { Authenticate, AuthResult } from './authenticate.js';

export interface AccessOptions {
  authenticate: Authenticate | undefined;
  /** The protected-resource metadata URL named in `WWW-Authenticate`, when it is served. */
  metadataUrl: string | undefined;
  /** The scopes a client signing in asks for (the metadata's `scopes_supported`), named in 401s. */
  scopes?: readonly string[] | undefined;
  maxRequestsPerSecond: number;
  maxFailedAuthPerMinute: number;
  /** An address that starts being refused for failed authentications (never given the token). */
  onAuthFailures: (address: string, failures: number) => void;
}

/** Who asked: the subject when authenticated, and the client's address (past trusted proxies). */
export interface Asker {
  readonly auth: AuthResult | undefined;
  readonly address: string;
  /** What this asker's shares are counted by: the subject, or `address:<ip>` without one. */
  readonly share: string;
}

/**
 * Who is asking, and whether they may ask now: authentication (401; 429 once the address is over
 * its failures), then the rate limit (429). Runs on the headers alone — before the body is read,
 * before either lane, before anything is written to the log.
 *
 * A valid credential is never refused for failures: behind an ingress every client shares the
 * proxy's address, and one stranger's bad tokens must not lock the others out (security review
 * H1). The address's budget only turns its further failures from 401 into 429. A request with no
 * credential at all is not a failure — an OAuth client's first request has none, and needs the 401
 * that names the metadata to sign in.
 */
export class Access {
  // Per subject (or address), in this replica's memory: a token bucket of twice the rate.
  private readonly limiter: RateLimiterMemory;
  // Per address: failed authentications in the last minute. Guessing tokens costs a minute.
  private readonly failures: RateLimiterMemory;

  constructor(private readonly options: AccessOptions) {
    this.limiter = new RateLimiterMemory({ points: options.maxRequestsPerSecond * 2, duration: 2 });
    this.failures = new RateLimiterMemory({
      points: options.maxFailedAuthPerMinute,
      duration: 60,
    });
  }

  async check(req: Request): Promise<Checked<Asker>> {
    const { authenticate } = this.options;
    const address = clientAddress(req);
    const auth = authenticate === undefined ? undefined : await authenticate(req);
    if (authenticate !== undefined && auth === undefined) return this.unauthenticated(req, address);
    const asker: Asker = { auth, address, share: auth?.subject ?? `${ADDRESS_SHARE}${address}` };
    // By subject; without authentication by address, except this machine's own clients.
    if (isExemptShare(asker.share)) return pass(asker);
    try {
      await this.limiter.consume(asker.share);
      return pass(asker);
    } catch (rejection) {
      return refuse(HttpRefusals.rateLimited(retryAfterSeconds(rejection as RateLimiterRes)));
    }
  }

  /**
   * Who POSTs to a signal's URL: its token is the capability, so no credential is needed — one
   * presented is checked (the answer then names its subject). Rate-limited as any request: by
   * subject, else by address.
   */
  async checkSignal(req: Request): Promise<Checked<Asker>> {
    if (req.headers.authorization !== undefined || this.options.authenticate === undefined)
      return this.check(req);
    const address = clientAddress(req);
    const asker: Asker = { auth: undefined, address, share: `${ADDRESS_SHARE}${address}` };
    if (isExemptShare(asker.share)) return pass(asker);
    try {
      await this.limiter.consume(asker.share);
      return pass(asker);
    } catch (rejection) {
      return refuse(HttpRefusals.rateLimited(retryAfterSeconds(rejection as RateLimiterRes)));
    }
  }

  /** 401 naming the metadata; a presented credential that failed counts against its address. */
  private async unauthenticated(req: Request, address: string): Promise<Checked<Asker>> {
    const { metadataUrl, scopes, maxFailedAuthPerMinute } = this.options;
    if (req.headers.authorization !== undefined) {
      const counted = await this.failures
        .consume(address)
        .catch((limited: RateLimiterRes) => limited);
      // Said once per minute of refusals: the moment the address reaches its limit.
      if (counted.consumedPoints === maxFailedAuthPerMinute)
        this.options.onAuthFailures(address, counted.consumedPoints);
      if (counted.consumedPoints > maxFailedAuthPerMinute) return refuse(tooManyFailures(counted));
    }
    // What a client signs in with: where the metadata is, and the scopes to ask for (the MCP
    // spec's scope selection takes a 401's `scope` first).
    const params = [
      ...(metadataUrl === undefined ? [] : [`resource_metadata="${metadataUrl}"`]),
      ...(scopes === undefined || scopes.length === 0 ? [] : [`scope="${scopes.join(' ')}"`]),
    ];
    return refuse(
      HttpRefusals.unauthorized(params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`),
    );
  }
}

/**
 * What a request's record says of its credential beyond the subject: the OAuth client and the
 * scopes, for the worker to check a tool's required scopes against and tools to read.
 */
export function callerOf(auth: AuthResult | undefined): { caller?: Caller } {
  if (auth === undefined || (auth.clientId === undefined && auth.scopes === undefined)) return {};
  return { caller: { clientId: auth.clientId, scopes: auth.scopes } };
}

/**
 * Shares no per-share cap applies to: this machine's own clients without authentication (a
 * developer's tools against `tidemark dev`, benchmarks), as with the rate limit.
 */
export function isExemptShare(share: string): boolean {
  return (
    share.startsWith(ADDRESS_SHARE) && LOOPBACK_ADDRESSES.has(share.slice(ADDRESS_SHARE.length))
  );
}

const ADDRESS_SHARE = 'address:';

/** The client's address: the socket's, or past the proxies the deployment trusts (`trust proxy`). */
function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '';
}

function tooManyFailures(limited: RateLimiterRes) {
  return HttpRefusals.tooManyFailedAuthentications(retryAfterSeconds(limited));
}

function retryAfterSeconds(limited: RateLimiterRes): number {
  return Math.max(1, Math.ceil((limited.msBeforeNext ?? 1_000) / 1000));
}
