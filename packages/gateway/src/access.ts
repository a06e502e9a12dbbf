import type { Request } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { HttpRefusals, LOOPBACK_ADDRESSES } from '@tidemark/protocol';
import { pass, refuse, type Checked } from './http-answers.js';
import type { Authenticate, AuthResult } from './auth/authenticators.js';

export interface AccessOptions {
  authenticate: Authenticate | undefined;
  /** The protected-resource metadata URL named in `WWW-Authenticate`, when it is served. */
  metadataUrl: string | undefined;
  maxRequestsPerSecond: number;
}

/**
 * Who is asking, and whether they may ask now: authentication (401) then the rate limit (429).
 * Runs before either lane and before anything is written to the log. `undefined` as the value:
 * no authentication is configured.
 */
export class Access {
  // Per subject (or address), in this replica's memory: a token bucket of twice the rate.
  private readonly limiter: RateLimiterMemory;

  constructor(private readonly options: AccessOptions) {
    this.limiter = new RateLimiterMemory({ points: options.maxRequestsPerSecond * 2, duration: 2 });
  }

  async check(req: Request): Promise<Checked<AuthResult | undefined>> {
    const { authenticate, metadataUrl } = this.options;
    const auth = authenticate === undefined ? undefined : await authenticate(req);
    if (authenticate !== undefined && auth === undefined)
      return refuse(
        HttpRefusals.unauthorized(
          metadataUrl === undefined ? 'Bearer' : `Bearer resource_metadata="${metadataUrl}"`,
        ),
      );
    // By subject; without authentication by address, except this machine's own clients.
    const address = req.socket.remoteAddress ?? '';
    if (auth === undefined && LOOPBACK_ADDRESSES.has(address)) return pass(auth);
    try {
      await this.limiter.consume(auth?.subject ?? `address:${address}`);
      return pass(auth);
    } catch (rejection) {
      const waitMs = (rejection as { msBeforeNext?: number }).msBeforeNext ?? 1_000;
      return refuse(HttpRefusals.rateLimited(Math.max(1, Math.ceil(waitMs / 1000))));
    }
  }
}
